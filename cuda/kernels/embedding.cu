// Embedding gather. Reference: embed() in reference/forward.cpp,
//   x[r] = token_embedding[batch[r].token] (times sqrt(dim) for Gemma,
//   one float multiplication: `scale` is 1 for the others, which is exact).
//
// A table kept in a quantized format (a GGUF file's token_embd.weight, issue
// 29) is gathered by decoding the row's items (quant_codec.cuh) with the host
// decoder's operations: x is the reference's float32 embedding bit for bit.
//
// A copy, so the grid is (rows, blocks along the row): at one decode row the
// 4,096 elements spread over 4 blocks. Each thread moves 4 consecutive
// elements (an 8- or 16-byte load, a 16-byte store) when the row length
// allows (vector_access.cuh).
#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda/cuda_check.h"
#include "cuda/kernels/dtype_device.cuh"
#include "cuda/kernels/kernels.h"
#include "cuda/kernels/quant_codec.cuh"
#include "cuda/kernels/vector_access.cuh"

namespace astrai::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kPerBlock = kThreads * kVec4;

template <typename T, bool kVector>
__global__ void __launch_bounds__(kThreads) embedding_gather_kernel(const T* __restrict__ table, int dim,
                                                                    const int* __restrict__ tokens, float scale,
                                                                    float* __restrict__ x) {
  const size_t r = blockIdx.x;
  const T* src = table + size_t(tokens[r]) * size_t(dim);
  float* dst = x + r * size_t(dim);
  const int i0 = int(blockIdx.y) * kPerBlock + int(threadIdx.x) * kVec4;
  if constexpr (kVector) {  // dim % 4 == 0
    if (i0 >= dim) return;
    float v[4];
    load4(src + i0, v);
    for (int e = 0; e < 4; ++e) v[e] = __fmul_rn(v[e], scale);
    store4(dst + i0, v);
  } else {
    for (int i = i0; i < i0 + kVec4 && i < dim; ++i) dst[i] = __fmul_rn(to_float(src[i]), scale);
  }
}

template <typename T>
void launch_typed(const T* table, int dim, const int* tokens, int rows, float scale, float* x, cudaStream_t stream) {
  const dim3 grid(unsigned(rows), unsigned((dim + kPerBlock - 1) / kPerBlock));
  const bool vector = vector_aligned<T>(table, dim) && vector_aligned<float>(x, dim);
  const auto kernel = vector ? embedding_gather_kernel<T, true> : embedding_gather_kernel<T, false>;
  ASTRAI_LAUNCH(kernel, grid, kThreads, 0, stream)(table, dim, tokens, scale, x);
}

// One thread per item of the row (a block, or a group of a K-quant super-block).
template <QuantFormat F>
__global__ void __launch_bounds__(kThreads) embedding_gather_quant_kernel(const uint8_t* __restrict__ table, int dim,
                                                                          const int* __restrict__ tokens,
                                                                          float scale, float* __restrict__ x) {
  using C = Codec<F>;
  const int blocks_per_row = dim / C::kBlockElements;
  const int item = int(blockIdx.y) * kThreads + int(threadIdx.x);
  if (item >= blocks_per_row * C::kItems) return;
  const size_t r = blockIdx.x;
  const int b = item / C::kItems, sub = item % C::kItems;
  const uint8_t* block = table + (size_t(tokens[r]) * size_t(blocks_per_row) + size_t(b)) * size_t(C::kBlockBytes);
  float v[C::kElements];
  C::decode(block, sub, v);
  float* dst = x + r * size_t(dim) + size_t(b) * C::kBlockElements + size_t(sub) * C::kElements;
#pragma unroll
  for (int e = 0; e < C::kElements; ++e) dst[e] = __fmul_rn(v[e], scale);
}

template <QuantFormat F>
void launch_quant(const uint8_t* table, int dim, const int* tokens, int rows, float scale, float* x,
                  cudaStream_t stream) {
  const int items = dim / Codec<F>::kBlockElements * Codec<F>::kItems;
  const dim3 grid(unsigned(rows), unsigned((items + kThreads - 1) / kThreads));
  ASTRAI_LAUNCH((embedding_gather_quant_kernel<F>), grid, kThreads, 0, stream)(table, dim, tokens, scale, x);
}

}  // namespace

void launch_embedding_gather_quant(const void* table, QuantFormat format, int dim, const int* tokens, int rows,
                                   float scale, float* x, cudaStream_t stream) {
  const QuantFormatInfo info = quant_format_info(format);
  if (dim % info.block_elements != 0)
    throw std::invalid_argument("launch_embedding_gather_quant: a row of " + std::to_string(dim) +
                                " weights is not whole " + std::string(info.name) + " blocks of " +
                                std::to_string(info.block_elements));
  if (rows == 0 || dim == 0) return;
  const auto* t = static_cast<const uint8_t*>(table);
  switch (format) {
    case QuantFormat::Q8_0: launch_quant<QuantFormat::Q8_0>(t, dim, tokens, rows, scale, x, stream); break;
    case QuantFormat::Q4_0: launch_quant<QuantFormat::Q4_0>(t, dim, tokens, rows, scale, x, stream); break;
    case QuantFormat::Q4_K: launch_quant<QuantFormat::Q4_K>(t, dim, tokens, rows, scale, x, stream); break;
    case QuantFormat::Q5_K: launch_quant<QuantFormat::Q5_K>(t, dim, tokens, rows, scale, x, stream); break;
    case QuantFormat::Q6_K: launch_quant<QuantFormat::Q6_K>(t, dim, tokens, rows, scale, x, stream); break;
  }
  ASTRAI_CUDA_CHECK_LAUNCH();
}

void launch_embedding_gather(const void* table, DType dtype, int dim, const int* tokens, int rows, float scale,
                             float* x, cudaStream_t stream) {
  if (rows == 0 || dim == 0) return;
  ASTRAI_DISPATCH_DTYPE(dtype, launch_typed(static_cast<const Elem*>(table), dim, tokens, rows, scale, x, stream));
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
