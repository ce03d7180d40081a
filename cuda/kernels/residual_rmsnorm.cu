// Residual add fused with RMSNorm. Reference: rmsnorm() in
// reference/rmsnorm.cpp, and the `x += ...` of attention_block() and
// feed_forward_block() in reference/forward.cpp:
//   x += delta;  out = weight * (x / sqrt(mean(x^2) + eps)).
// With a row map it also serves the final norm of the rows that want logits
// (logits_of_wanted_rows()), gathering them into consecutive output rows.
//
// The sum of squares is reduced in a fixed order (per-thread sums over the
// thread's elements in index order, then a fixed warp-shuffle tree, then the
// warp sums in warp order), so a row's result never depends on the other
// rows: batch invariance.
//
// One block per row. When dim is a multiple of 4 each thread takes 4
// consecutive elements at a time (16-byte loads and stores of x and delta,
// 8- or 16-byte ones of the weight and the output: vector_access.cuh), so at
// Llama's dim 4,096 the block's 256 threads hold all of x and delta in 8
// loads each, in flight at once: a decode row costs about one memory round
// trip. Splitting a row over several blocks would need a second pass (or a
// grid-wide reduction) for the sum of squares, for 40 KB of traffic.
#include "cuda/cuda_check.h"
#include "cuda/kernels/dtype_device.cuh"
#include "cuda/kernels/kernels.h"
#include "cuda/kernels/vector_access.cuh"

namespace astrai::cuda {
namespace {

constexpr int kThreads = 256;

// x[j] (+= delta[j], stored back) for j in this thread's group j0 .. j0 + n; returns the values in v.
template <bool kVector>
__device__ __forceinline__ void add_group(float* xr, const float* dr, int j0, float (&v)[4]) {
  if constexpr (kVector) {
    load4(xr + j0, v);
    if (dr) {
      float d[4];
      load4(dr + j0, d);
      for (int e = 0; e < 4; ++e) v[e] = __fadd_rn(v[e], d[e]);
      store4(xr + j0, v);
    }
  } else {
    v[0] = xr[j0];
    if (dr) {
      v[0] = __fadd_rn(v[0], dr[j0]);
      xr[j0] = v[0];
    }
  }
}

template <typename T, bool kVector>
__global__ void __launch_bounds__(kThreads)
    residual_rmsnorm_kernel(float* __restrict__ x, const float* __restrict__ delta, const T* __restrict__ weight,
                            int dim, float eps, const int* __restrict__ row_map, T* __restrict__ out) {
  constexpr int n = kVector ? kVec4 : 1;  // elements a thread takes at a time
  __shared__ float warp_sums[kThreads / 32];
  __shared__ float inv_rms;
  const size_t i = blockIdx.x;
  const size_t r = row_map ? size_t(row_map[i]) : i;
  float* xr = x + r * size_t(dim);
  const float* dr = delta ? delta + r * size_t(dim) : nullptr;
  T* o = out + i * size_t(dim);
  float sum_sq = 0.0f;
#pragma unroll 4
  for (int j0 = int(threadIdx.x) * n; j0 < dim; j0 += kThreads * n) {
    float v[4];
    add_group<kVector>(xr, dr, j0, v);
    for (int e = 0; e < n; ++e) sum_sq = __fmaf_rn(v[e], v[e], sum_sq);
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
  for (int j0 = int(threadIdx.x) * n; j0 < dim; j0 += kThreads * n) {
    if constexpr (kVector) {
      float v[4], w[4];
      load4(xr + j0, v);
      load4(weight + j0, w);
      for (int e = 0; e < 4; ++e) v[e] = __fmul_rn(w[e], __fmul_rn(inv_rms, v[e]));
      store4(o + j0, v);
    } else {
      o[j0] = from_float<T>(__fmul_rn(to_float(weight[j0]), __fmul_rn(inv_rms, xr[j0])));
    }
  }
}

template <typename T>
void launch_typed(float* x, const float* delta, const T* weight, int dim, float eps, const int* row_map,
                  int out_rows, T* out, cudaStream_t stream) {
  const bool vector = vector_aligned<float>(x, dim) && (!delta || vector_aligned<float>(delta, dim)) &&
                      vector_aligned<T>(weight, dim) && vector_aligned<T>(out, dim);
  const auto kernel = vector ? residual_rmsnorm_kernel<T, true> : residual_rmsnorm_kernel<T, false>;
  ASTRAI_LAUNCH(kernel, out_rows, kThreads, 0, stream)(x, delta, weight, dim, eps, row_map, out);
}

}  // namespace

void launch_residual_rmsnorm(float* x, const float* delta, const void* weight, DType dtype, int dim, float eps,
                             const int* row_map, int out_rows, void* out, cudaStream_t stream) {
  if (out_rows == 0) return;
  ASTRAI_DISPATCH_DTYPE(dtype, launch_typed(x, delta, static_cast<const Elem*>(weight), dim, eps, row_map, out_rows,
                                            static_cast<Elem*>(out), stream));
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
