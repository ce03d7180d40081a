// Residual add fused with RMSNorm. Reference: rmsnorm() in
// reference/rmsnorm.cpp, and the `x += ...` of attention_block() and
// feed_forward_block() in reference/forward.cpp:
//   x += delta;  out = weight * (x / sqrt(mean(x^2) + eps)).
// With a row map it also serves the final norm of the rows that want logits
// (logits_of_wanted_rows()), gathering them into consecutive output rows.
//
// The sum of squares is reduced in a fixed order (per-thread strided sums,
// then a fixed warp-shuffle tree, then the warp sums in warp order), so a
// row's result never depends on the other rows: batch invariance.
#include "cuda/cuda_check.h"
#include "cuda/kernels/dtype_device.cuh"
#include "cuda/kernels/kernels.h"

namespace astrai::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void residual_rmsnorm_kernel(float* __restrict__ x, const float* __restrict__ delta,
                                        const T* __restrict__ weight, int dim, float eps,
                                        const int* __restrict__ row_map, T* __restrict__ out) {
  __shared__ float warp_sums[kThreads / 32];
  __shared__ float inv_rms;
  const size_t i = blockIdx.x;
  const size_t r = row_map ? size_t(row_map[i]) : i;
  float* xr = x + r * size_t(dim);
  float sum_sq = 0.0f;
  for (int j = threadIdx.x; j < dim; j += kThreads) {
    float v = xr[j];
    if (delta) {
      v = __fadd_rn(v, delta[r * size_t(dim) + size_t(j)]);
      xr[j] = v;
    }
    sum_sq = __fmaf_rn(v, v, sum_sq);
  }
  for (int offset = 16; offset > 0; offset /= 2) sum_sq += __shfl_down_sync(0xffffffffu, sum_sq, offset);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = sum_sq;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int w = 0; w < kThreads / 32; ++w) total += warp_sums[w];
    inv_rms = 1.0f / sqrtf(total / float(dim) + eps);
  }
  __syncthreads();
  // Each thread rereads the elements it wrote itself above.
  for (int j = threadIdx.x; j < dim; j += kThreads)
    out[i * size_t(dim) + size_t(j)] = from_float<T>(__fmul_rn(to_float(weight[j]), __fmul_rn(inv_rms, xr[j])));
}

}  // namespace

void launch_residual_rmsnorm(float* x, const float* delta, const void* weight, DType dtype, int dim, float eps,
                             const int* row_map, int out_rows, void* out, cudaStream_t stream) {
  if (out_rows == 0) return;
  ASTRAI_DISPATCH_DTYPE(dtype, ASTRAI_LAUNCH(residual_rmsnorm_kernel<Elem>, out_rows, kThreads, 0, stream)(
                                   x, delta, static_cast<const Elem*>(weight), dim, eps, row_map,
                                   static_cast<Elem*>(out)));
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
