// Float32 -> storage type conversion, used when weights are uploaded (the
// host uploads float32, the device rounds: one rounding rule everywhere).
#include "cuda/cuda_check.h"
#include "cuda/kernels/dtype_device.cuh"
#include "cuda/kernels/kernels.h"

namespace astrai::cuda {
namespace {

template <typename T>
__global__ void convert_kernel(const float* __restrict__ in, size_t n, T* __restrict__ out) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    out[i] = from_float<T>(in[i]);
}

}  // namespace

void launch_convert_from_float(const float* in, size_t n, void* out, DType dtype, cudaStream_t stream) {
  if (n == 0) return;
  const unsigned blocks = unsigned(n / 256 + 1 < 65536 ? n / 256 + 1 : 65536);
  ASTRAI_DISPATCH_DTYPE(dtype, ASTRAI_LAUNCH(convert_kernel<Elem>, blocks, 256, 0, stream)(in, n, static_cast<Elem*>(out)));
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
