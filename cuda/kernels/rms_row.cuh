// One row's RMSNorm arithmetic for matvec.cu's normalizing prologue (the
// norm inside the next product, docs/cuda.md "Norms inside the mat-vec"):
// residual_rmsnorm.cu's sum of squares, in its thread mapping, loop order and
// tree, and its scaling expression, so the prologue gives a row's
// normalized values bit for bit as the norm launch does (test_gemm's
// "the fused mat-vec gives the bits of the separate norm and mat-vec and
// residual add" holds them equal), and neither depends on the rows beside it.
// residual_rmsnorm.cu calls block_sum and keeps its loop inline (with the
// loop behind inv_rms's callable, the emulated build's access trace of that
// kernel changed, and with it the performance report's figures, for the
// same loads).
#pragma once

#include "cuda/kernels/dtype_device.cuh"

namespace astrai::cuda::rms_row {

// The sum over the block of every thread's v, in a fixed order (the warps'
// shuffle trees, then the warp sums in warp order), returned to every
// thread. warp_sums and total are the block's shared scratch; a second call
// may reuse them: thread 0 reads warp_sums before the barrier every thread
// passes before any writes them again, and each thread copies `total` out
// before it reaches the next call's first barrier.
template <int kThreads>
__device__ __forceinline__ float block_sum(float v, float* warp_sums, float* total) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0.0f;
    for (int w = 0; w < kThreads / 32; ++w) t += warp_sums[w];
    *total = t;
  }
  __syncthreads();
  return *total;
}

// 1 / sqrt(mean(v^2) + eps) over a row of dim elements, to every thread of
// the block: residual_rmsnorm_kernel's loop and order. values(j0, v) gives elements j0 .. j0 + n in v (n = 4 when
// kVector, else 1); thread t takes the groups at t n, t n + kThreads n, ...
// in that order.
template <int kThreads, bool kVector, typename Values>
__device__ __forceinline__ float inv_rms(int dim, float eps, Values&& values, float* warp_sums, float* total) {
  constexpr int n = kVector ? 4 : 1;
  float sum_sq = 0.0f;
#pragma unroll 4
  for (int j0 = int(threadIdx.x) * n; j0 < dim; j0 += kThreads * n) {
    float v[4];
    values(j0, v);
    for (int e = 0; e < n; ++e) sum_sq = __fmaf_rn(v[e], v[e], sum_sq);
  }
  return 1.0f / sqrtf(block_sum<kThreads>(sum_sq, warp_sums, total) / float(dim) + eps);
}

// A norm weight w as the scale: w, or offset + w in float (no add at offset
// 0, so a weight of -0 stays -0 as in the reference).
__device__ __forceinline__ float scale(float w, float offset) { return offset != 0.0f ? __fadd_rn(offset, w) : w; }

// One normalized element, in rmsnorm()'s order: scale * (inv_rms * v).
__device__ __forceinline__ float normalized(float v, float scale, float inv_rms) {
  return __fmul_rn(scale, __fmul_rn(inv_rms, v));
}

}  // namespace astrai::cuda::rms_row
