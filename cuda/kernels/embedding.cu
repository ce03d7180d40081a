// Embedding gather. Reference: embed() in reference/forward.cpp,
//   x[r] = token_embedding[batch[r].token].
//
// A copy, so the grid is (rows, blocks along the row): at one decode row the
// 4,096 elements spread over 4 blocks. Each thread moves 4 consecutive
// elements (an 8- or 16-byte load, a 16-byte store) when the row length
// allows (vector_access.cuh).
#include "cuda/cuda_check.h"
#include "cuda/kernels/dtype_device.cuh"
#include "cuda/kernels/kernels.h"
#include "cuda/kernels/vector_access.cuh"

namespace astrai::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kPerBlock = kThreads * kVec4;

template <typename T, bool kVector>
__global__ void __launch_bounds__(kThreads) embedding_gather_kernel(const T* __restrict__ table, int dim,
                                                                    const int* __restrict__ tokens,
                                                                    float* __restrict__ x) {
  const size_t r = blockIdx.x;
  const T* src = table + size_t(tokens[r]) * size_t(dim);
  float* dst = x + r * size_t(dim);
  const int i0 = int(blockIdx.y) * kPerBlock + int(threadIdx.x) * kVec4;
  if constexpr (kVector) {  // dim % 4 == 0
    if (i0 >= dim) return;
    float v[4];
    load4(src + i0, v);
    store4(dst + i0, v);
  } else {
    for (int i = i0; i < i0 + kVec4 && i < dim; ++i) dst[i] = to_float(src[i]);
  }
}

template <typename T>
void launch_typed(const T* table, int dim, const int* tokens, int rows, float* x, cudaStream_t stream) {
  const dim3 grid(unsigned(rows), unsigned((dim + kPerBlock - 1) / kPerBlock));
  const bool vector = vector_aligned<T>(table, dim) && vector_aligned<float>(x, dim);
  const auto kernel = vector ? embedding_gather_kernel<T, true> : embedding_gather_kernel<T, false>;
  ASTRAI_LAUNCH(kernel, grid, kThreads, 0, stream)(table, dim, tokens, x);
}

}  // namespace

void launch_embedding_gather(const void* table, DType dtype, int dim, const int* tokens, int rows, float* x,
                             cudaStream_t stream) {
  if (rows == 0 || dim == 0) return;
  ASTRAI_DISPATCH_DTYPE(dtype, launch_typed(static_cast<const Elem*>(table), dim, tokens, rows, x, stream));
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
