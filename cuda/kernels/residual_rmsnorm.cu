// Residual add fused with RMSNorm. Reference: rmsnorm() in
// reference/rmsnorm.cpp, and the `x += ...` of attention_block() and
// feed_forward_block() in reference/forward.cpp:
//   x += delta;  out = weight * (x / sqrt(mean(x^2) + eps)),
// where delta may carry a bias (gpt-oss's o_proj bias, added first) and be
// RMSNormed itself (Gemma 3's sandwich norms: a first pass over the row sums
// the delta's squares), and a norm's weight w may be an offset from 1
// (Gemma: 1 + w, in float).
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
#include "cuda/kernels/rms_row.cuh"
#include "cuda/kernels/vector_access.cuh"

namespace astrai::cuda {
namespace {

constexpr int kThreads = 256;

// What the kernel reads of ResidualDelta and NormScale, typed.
template <typename T>
struct Delta {
  const float* rows;  // null: nothing is added
  const T* bias;      // null: none
  const T* norm;      // null: not normalized
  float norm_offset;
};

// The delta's elements j0 .. j0 + n of row dr, its bias added (bias after
// the product, as reference/forward.cpp's project()).
template <typename T, bool kVector>
__device__ __forceinline__ void delta_group(const float* dr, const T* bias, int j0, float (&d)[4]) {
  if constexpr (kVector) {
    load4(dr + j0, d);
    if (bias) {
      float b[4];
      load4(bias + j0, b);
      for (int e = 0; e < 4; ++e) d[e] = __fadd_rn(d[e], b[e]);
    }
  } else {
    d[0] = dr[j0];
    if (bias) d[0] = __fadd_rn(d[0], to_float(bias[j0]));
  }
}

// Elements j0 .. j0 + n of a norm's scale: w, or offset + w in float (no
// add at offset 0, so a weight of -0 stays -0 as in the reference).
template <typename T, bool kVector>
__device__ __forceinline__ void scale_group(const T* w, float offset, int j0, float (&s)[4]) {
  if constexpr (kVector) {
    load4(w + j0, s);
  } else {
    s[0] = to_float(w[j0]);
  }
  if (offset != 0.0f)
    for (int e = 0; e < (kVector ? kVec4 : 1); ++e) s[e] = __fadd_rn(offset, s[e]);
}

// x[j] (+= delta[j], normalized first when asked, stored back) for j in this
// thread's group j0 .. j0 + n; returns the values in v. inv_rms_delta is the
// delta's 1 / rms when it is normalized.
template <typename T, bool kVector>
__device__ __forceinline__ void add_group(float* xr, const float* dr, const Delta<T>& delta, float inv_rms_delta,
                                          int j0, float (&v)[4]) {
  constexpr int n = kVector ? kVec4 : 1;
  if constexpr (kVector) load4(xr + j0, v);
  else v[0] = xr[j0];
  if (!dr) return;
  float d[4];
  delta_group<T, kVector>(dr, delta.bias, j0, d);
  if (delta.norm) {  // scale * (inv_rms * d), rmsnorm()'s order
    float s[4];
    scale_group<T, kVector>(delta.norm, delta.norm_offset, j0, s);
    for (int e = 0; e < n; ++e) d[e] = __fmul_rn(s[e], __fmul_rn(inv_rms_delta, d[e]));
  }
  for (int e = 0; e < n; ++e) v[e] = __fadd_rn(v[e], d[e]);
  if constexpr (kVector) store4(xr + j0, v);
  else xr[j0] = v[0];
}

template <typename T, bool kVector>
__global__ void __launch_bounds__(kThreads)
    residual_rmsnorm_kernel(float* __restrict__ x, Delta<T> delta, const T* __restrict__ weight, float offset,
                            int dim, float eps, const int* __restrict__ row_map, T* __restrict__ out) {
  constexpr int n = kVector ? kVec4 : 1;  // elements a thread takes at a time
  __shared__ float warp_sums[kThreads / 32];
  __shared__ float total;
  const size_t i = blockIdx.x;
  const size_t r = row_map ? size_t(row_map[i]) : i;
  float* xr = x + r * size_t(dim);
  const float* dr = delta.rows ? delta.rows + r * size_t(dim) : nullptr;
  T* o = out + i * size_t(dim);
  float inv_rms_delta = 0.0f;
  if (dr && delta.norm) {  // the delta's own RMS first (Gemma 3's sandwich norms)
    float sum_sq = 0.0f;
    for (int j0 = int(threadIdx.x) * n; j0 < dim; j0 += kThreads * n) {
      float d[4];
      delta_group<T, kVector>(dr, delta.bias, j0, d);
      for (int e = 0; e < n; ++e) sum_sq = __fmaf_rn(d[e], d[e], sum_sq);
    }
    inv_rms_delta = 1.0f / sqrtf(rms_row::block_sum<kThreads>(sum_sq, warp_sums, &total) / float(dim) + eps);
  }
  float sum_sq = 0.0f;
#pragma unroll 4
  for (int j0 = int(threadIdx.x) * n; j0 < dim; j0 += kThreads * n) {
    float v[4];
    add_group<T, kVector>(xr, dr, delta, inv_rms_delta, j0, v);
    for (int e = 0; e < n; ++e) sum_sq = __fmaf_rn(v[e], v[e], sum_sq);
  }
  const float inv_rms = 1.0f / sqrtf(rms_row::block_sum<kThreads>(sum_sq, warp_sums, &total) / float(dim) + eps);
  // Each thread rereads the elements it wrote itself above.
  for (int j0 = int(threadIdx.x) * n; j0 < dim; j0 += kThreads * n) {
    float v[4], s[4];
    if constexpr (kVector) load4(xr + j0, v);
    else v[0] = xr[j0];
    scale_group<T, kVector>(weight, offset, j0, s);
    for (int e = 0; e < n; ++e) v[e] = __fmul_rn(s[e], __fmul_rn(inv_rms, v[e]));
    if constexpr (kVector) store4(o + j0, v);
    else o[j0] = from_float<T>(v[0]);
  }
}

template <typename T>
void launch_typed(float* x, const ResidualDelta& d, NormScale norm, int dim, float eps, const int* row_map,
                  int out_rows, T* out, cudaStream_t stream) {
  const Delta<T> delta{d.rows, static_cast<const T*>(d.bias), static_cast<const T*>(d.norm.weight), d.norm.offset};
  const auto* weight = static_cast<const T*>(norm.weight);
  const bool vector = vector_aligned<float>(x, dim) && (!delta.rows || vector_aligned<float>(delta.rows, dim)) &&
                      (!delta.bias || vector_aligned<T>(delta.bias, dim)) &&
                      (!delta.norm || vector_aligned<T>(delta.norm, dim)) && vector_aligned<T>(weight, dim) &&
                      vector_aligned<T>(out, dim);
  const auto kernel = vector ? residual_rmsnorm_kernel<T, true> : residual_rmsnorm_kernel<T, false>;
  ASTRAI_LAUNCH(kernel, out_rows, kThreads, 0, stream)(x, delta, weight, norm.offset, dim, eps, row_map, out);
}

}  // namespace

void launch_residual_rmsnorm(float* x, const ResidualDelta& delta, NormScale norm, DType dtype, int dim, float eps,
                             const int* row_map, int out_rows, void* out, cudaStream_t stream) {
  if (out_rows == 0) return;
  ASTRAI_DISPATCH_DTYPE(dtype,
                        launch_typed(x, delta, norm, dim, eps, row_map, out_rows, static_cast<Elem*>(out), stream));
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
