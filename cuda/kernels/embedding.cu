// Embedding gather. Reference: embed() in reference/forward.cpp,
//   x[r] = token_embedding[batch[r].token].
#include "cuda/cuda_check.h"
#include "cuda/kernels/dtype_device.cuh"
#include "cuda/kernels/kernels.h"

namespace astrai::cuda {
namespace {

// One block per row; threads stride over the row.
template <typename T>
__global__ void embedding_gather_kernel(const T* __restrict__ table, int dim, const int* __restrict__ tokens,
                                        float* __restrict__ x) {
  const size_t r = blockIdx.x;
  const T* src = table + size_t(tokens[r]) * size_t(dim);
  for (int i = threadIdx.x; i < dim; i += blockDim.x) x[r * size_t(dim) + size_t(i)] = to_float(src[i]);
}

}  // namespace

void launch_embedding_gather(const void* table, DType dtype, int dim, const int* tokens, int rows, float* x,
                             cudaStream_t stream) {
  if (rows == 0) return;
  ASTRAI_DISPATCH_DTYPE(dtype, ASTRAI_LAUNCH(embedding_gather_kernel<Elem>, rows, 128, 0, stream)(
                                   static_cast<const Elem*>(table), dim, tokens, x));
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
