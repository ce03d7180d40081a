// Quantized weights to the storage type, for prefill (issue 29): GemmRunner
// turns a slice of a quantized matrix into bf16 (or float32) with this and
// multiplies it with cuBLASLt, where a step of many rows is compute-bound
// and reading the weights once more costs little. Reference:
// quant::dequantize() (engine/model_files/quant/), then the rounding to the
// storage type:
//   out[j, k] = dtype(W[j, k]),  W [rows, cols] as `format` blocks, out [rows, cols] dense.
// One thread per item (quant_codec.cuh): a block or a group of one, whose
// weights it decodes as the host does and writes in row order.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda/cuda_check.h"
#include "cuda/kernels/dtype_device.cuh"
#include "cuda/kernels/kernels.h"
#include "cuda/kernels/quant_codec.cuh"

namespace astrai::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T, QuantFormat F>
__global__ void __launch_bounds__(kThreads) dequantize_kernel(const uint8_t* __restrict__ w, size_t items, int cols,
                                                              T* __restrict__ out) {
  using C = Codec<F>;
  const size_t item = size_t(blockIdx.x) * kThreads + threadIdx.x;
  if (item >= items) return;
  // Items are numbered in row order: block b = item / kItems of the whole
  // matrix (rows back to back), its sub-item item % kItems.
  const size_t b = item / C::kItems;
  const int sub = int(item % C::kItems);
  float v[C::kElements];
  C::decode(w + b * size_t(C::kBlockBytes), sub, v);
  const size_t blocks_per_row = size_t(cols) / size_t(C::kBlockElements);
  const size_t row = b / blocks_per_row;
  const size_t k0 = (b % blocks_per_row) * size_t(C::kBlockElements) + size_t(sub) * C::kElements;
  T* o = out + row * size_t(cols) + k0;
#pragma unroll
  for (int e = 0; e < C::kElements; ++e) o[e] = from_float<T>(v[e]);
}

template <typename T, QuantFormat F>
void launch_format(const uint8_t* w, int rows, int cols, T* out, cudaStream_t stream) {
  const size_t items = size_t(rows) * (size_t(cols) / size_t(quant_format_info(F).block_elements)) * Codec<F>::kItems;
  const unsigned grid = unsigned((items + kThreads - 1) / kThreads);
  ASTRAI_LAUNCH((dequantize_kernel<T, F>), grid, kThreads, 0, stream)(w, items, cols, out);
}

template <typename T>
void launch_typed(const uint8_t* w, QuantFormat format, int rows, int cols, T* out, cudaStream_t stream) {
  switch (format) {
    case QuantFormat::Q8_0: return launch_format<T, QuantFormat::Q8_0>(w, rows, cols, out, stream);
    case QuantFormat::Q4_0: return launch_format<T, QuantFormat::Q4_0>(w, rows, cols, out, stream);
    case QuantFormat::Q4_K: return launch_format<T, QuantFormat::Q4_K>(w, rows, cols, out, stream);
    case QuantFormat::Q5_K: return launch_format<T, QuantFormat::Q5_K>(w, rows, cols, out, stream);
    case QuantFormat::Q6_K: return launch_format<T, QuantFormat::Q6_K>(w, rows, cols, out, stream);
  }
}

}  // namespace

void launch_dequantize(const void* w, QuantFormat format, int rows, int cols, void* out, DType dtype,
                       cudaStream_t stream) {
  const QuantFormatInfo info = quant_format_info(format);
  if (cols % info.block_elements != 0)
    throw std::invalid_argument("launch_dequantize: a row of " + std::to_string(cols) + " weights is not whole " +
                                std::string(info.name) + " blocks of " + std::to_string(info.block_elements));
  if (rows <= 0 || cols <= 0) return;
  ASTRAI_DISPATCH_DTYPE(dtype, launch_typed(static_cast<const uint8_t*>(w), format, rows, cols, static_cast<Elem*>(out),
                                            stream));
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
