// Float32 -> storage type conversion, used when weights are uploaded (the
// host uploads float32, the device rounds: one rounding rule everywhere).
// Each thread converts 4 consecutive elements at a time (a 16-byte load, a
// 16- or 8-byte store: vector_access.cuh) when both arrays allow; the last
// n % 4 elements, or all of them otherwise, one at a time.
#include "cuda/cuda_check.h"
#include "cuda/kernels/dtype_device.cuh"
#include "cuda/kernels/kernels.h"
#include "cuda/kernels/vector_access.cuh"

namespace astrai::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T, bool kVector>
__global__ void __launch_bounds__(kThreads) convert_kernel(const float* __restrict__ in, size_t n,
                                                           T* __restrict__ out) {
  const size_t first = size_t(blockIdx.x) * kThreads + threadIdx.x, stride = size_t(gridDim.x) * kThreads;
  size_t scalar_from = 0;
  if constexpr (kVector) {
    const size_t vectors = n / kVec4;
    for (size_t v = first; v < vectors; v += stride) {
      float x[4];
      load4(in + v * kVec4, x);
      store4(out + v * kVec4, x);
    }
    scalar_from = vectors * kVec4;
  }
  for (size_t i = scalar_from + first; i < n; i += stride) out[i] = from_float<T>(in[i]);
}

template <typename T>
void launch_typed(const float* in, size_t n, T* out, cudaStream_t stream) {
  const bool vector = vector_aligned<float>(in, 0) && vector_aligned<T>(out, 0);
  const size_t work = vector ? n / kVec4 + 1 : n;
  const unsigned blocks = unsigned(work / kThreads + 1 < 65536 ? work / kThreads + 1 : 65536);
  const auto kernel = vector ? convert_kernel<T, true> : convert_kernel<T, false>;
  ASTRAI_LAUNCH(kernel, blocks, kThreads, 0, stream)(in, n, out);
}

}  // namespace

void launch_convert_from_float(const float* in, size_t n, void* out, DType dtype, cudaStream_t stream) {
  if (n == 0) return;
  ASTRAI_DISPATCH_DTYPE(dtype, launch_typed(in, n, static_cast<Elem*>(out), stream));
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
