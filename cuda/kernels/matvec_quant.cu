// The decode step's mat-vec on quantized weights (issue 29): y = x W^T for 1
// to kMatvecMaxRows rows, W kept in its GGUF block format (Q8_0, Q4_0, Q4_K,
// Q5_K, Q6_K: cuda/quant_format.h) and decoded in registers, so a step reads
// the file's bytes (4.5 bits a weight for Q4_K) instead of bf16's 16.
// Reference: linear() in reference/linear.cpp on the weights the host
// decoders give (engine/model_files/quant/, which match ggml's bit for bit):
//   y[r, j] = sum_k x[r, k] W[j, k],   x [rows, in] of `dtype`, y float32 [rows, out].
//
// Each weight is decoded with the host decoder's float operations in its
// order (quant_codec.cuh), so the device's weights are the host's bit for
// bit; only the order of the float32 sum differs from the reference's.
//
// The shape of matvec.cu: kLanes (32) lanes per output j, 8 outputs per
// block. A lane's unit of work is an item of quant_codec.cuh (a Q8_0/Q4_0
// block, a group of 32 of a Q4_K/Q5_K super-block, of 16 of Q6_K). Lane l
// takes items l, l + 32, ...; its sums meet the other lanes' in shared memory and one thread
// per (row, output) adds them by a fixed pairwise tree, so a row's bits never
// depend on the rows around it (batch invariance, as matvec.cu).
//
// Not yet tuned: each weight byte is a byte load (a GPU coalesces a warp's
// neighbouring bytes, but wider loads and llama.cpp's q8_1 activations with
// integer dot products are the next step; docs/cuda.md, "Quantized weights").
#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda/cuda_check.h"
#include "cuda/kernels/dtype_device.cuh"
#include "cuda/kernels/kernels.h"
#include "cuda/kernels/matvec_lanes.cuh"
#include "cuda/kernels/quant_codec.cuh"

namespace astrai::cuda {
namespace {

using matvec_lanes::kLanes;    // lanes per output
using matvec_lanes::kOutputs;
using matvec_lanes::kThreads;

template <typename T, QuantFormat F, int kRows>
__global__ void __launch_bounds__(kThreads) matvec_quant_kernel(const T* __restrict__ x, const uint8_t* __restrict__ w,
                                                                int in, int out, float* __restrict__ y, int ldy) {
  using C = Codec<F>;
  __shared__ float partial[kRows][kOutputs][kLanes + 1];
  const int o = int(threadIdx.x) / kLanes, lane = int(threadIdx.x) % kLanes;
  const int j0 = int(blockIdx.x) * kOutputs, j = j0 + o;
  if (j < out) {
    const int blocks = in / C::kBlockElements;
    const uint8_t* row = w + size_t(j) * size_t(blocks) * size_t(C::kBlockBytes);
    float acc[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) acc[r] = 0.0f;
    for (int item = lane; item < blocks * C::kItems; item += kLanes) {
      const int b = item / C::kItems, sub = item % C::kItems;
      float wv[C::kElements];
      C::decode(row + size_t(b) * size_t(C::kBlockBytes), sub, wv);
      const size_t k0 = size_t(b) * size_t(C::kBlockElements) + size_t(sub) * C::kElements;
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const T* xr = x + size_t(r) * size_t(in) + k0;
#pragma unroll
        for (int e = 0; e < C::kElements; ++e) acc[r] = __fmaf_rn(to_float(xr[e]), wv[e], acc[r]);
      }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) partial[r][o][lane] = acc[r];
  }
  __syncthreads();
  matvec_lanes::store_row_sums<kRows>(partial, j0, out, y, ldy);
}

template <typename T, QuantFormat F, int kRows>
void launch_rows(const T* x, const uint8_t* w, int in, int out, float* y, int ldy, cudaStream_t stream) {
  const unsigned blocks = unsigned((out + kOutputs - 1) / kOutputs);
  ASTRAI_LAUNCH((matvec_quant_kernel<T, F, kRows>), blocks, kThreads, 0, stream)(x, w, in, out, y, ldy);
}

template <typename T, QuantFormat F>
void launch_format(const T* x, const uint8_t* w, int rows, int in, int out, float* y, int ldy, cudaStream_t stream) {
  switch (rows) {
    case 1: return launch_rows<T, F, 1>(x, w, in, out, y, ldy, stream);
    case 2: return launch_rows<T, F, 2>(x, w, in, out, y, ldy, stream);
    case 3: return launch_rows<T, F, 3>(x, w, in, out, y, ldy, stream);
    case 4: return launch_rows<T, F, 4>(x, w, in, out, y, ldy, stream);
    case 5: return launch_rows<T, F, 5>(x, w, in, out, y, ldy, stream);
    case 6: return launch_rows<T, F, 6>(x, w, in, out, y, ldy, stream);
    case 7: return launch_rows<T, F, 7>(x, w, in, out, y, ldy, stream);
    case 8: return launch_rows<T, F, 8>(x, w, in, out, y, ldy, stream);
  }
}

template <typename T>
void launch_typed(const T* x, const uint8_t* w, QuantFormat format, int rows, int in, int out, float* y, int ldy,
                  cudaStream_t stream) {
  switch (format) {
    case QuantFormat::Q8_0: return launch_format<T, QuantFormat::Q8_0>(x, w, rows, in, out, y, ldy, stream);
    case QuantFormat::Q4_0: return launch_format<T, QuantFormat::Q4_0>(x, w, rows, in, out, y, ldy, stream);
    case QuantFormat::Q4_K: return launch_format<T, QuantFormat::Q4_K>(x, w, rows, in, out, y, ldy, stream);
    case QuantFormat::Q5_K: return launch_format<T, QuantFormat::Q5_K>(x, w, rows, in, out, y, ldy, stream);
    case QuantFormat::Q6_K: return launch_format<T, QuantFormat::Q6_K>(x, w, rows, in, out, y, ldy, stream);
  }
}

}  // namespace

void launch_matvec_quant(const void* x, DType dtype, const void* w, QuantFormat format, int rows, int in, int out,
                         float* y, int ldy, cudaStream_t stream) {
  static_assert(kMatvecMaxRows == 8, "launch_format has a case per row count");
  if (rows < 0 || rows > kMatvecMaxRows)
    throw std::invalid_argument("launch_matvec_quant: " + std::to_string(rows) + " rows (1 to " +
                                std::to_string(kMatvecMaxRows) + ")");
  const QuantFormatInfo info = quant_format_info(format);
  if (in % info.block_elements != 0)
    throw std::invalid_argument("launch_matvec_quant: a row of " + std::to_string(in) + " weights is not whole " +
                                std::string(info.name) + " blocks of " + std::to_string(info.block_elements));
  if (ldy < out) throw std::invalid_argument("launch_matvec_quant: ldy below out");
  if (rows == 0 || out == 0) return;
  ASTRAI_DISPATCH_DTYPE(dtype, launch_typed(static_cast<const Elem*>(x), static_cast<const uint8_t*>(w), format, rows,
                                            in, out, y, ldy, stream));
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
