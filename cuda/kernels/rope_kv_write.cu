// RoPE fused with the write of K and V into their pages. Reference:
// apply_rope() in reference/rope.cpp applied to q and k, then write_kv() in
// reference/forward.cpp: K enters the cache already rotated.
//   a' = a cos(angle) - b sin(angle),  b' = a sin(angle) + b cos(angle)
// over the pairs (2i, 2i+1) (AdjacentPairs) or (i, i + head_dim/2) (RotateHalf),
// angle = pos * theta^(-2i/head_dim), taken from a table the host fills with
// the reference's own float arithmetic. Explicitly rounded multiplies and
// adds (no FMA contraction) make the float32 result equal the reference's.
#include "cuda/cuda_check.h"
#include "cuda/kernels/dtype_device.cuh"
#include "cuda/kernels/kernels.h"

namespace astrai::cuda {
namespace {

__device__ __forceinline__ void pair_index(int i, int head_dim, bool adjacent, int& ia, int& ib) {
  ia = adjacent ? 2 * i : i;
  ib = adjacent ? 2 * i + 1 : i + head_dim / 2;
}

// One block per row. Pairs of all q and k heads are spread over the threads.
template <typename T>
__global__ void rope_kv_write_kernel(float* __restrict__ qkv, int n_heads, int n_kv_heads, int head_dim,
                                     bool adjacent, const int* __restrict__ row_pos,
                                     const float* __restrict__ rope_cos, const float* __restrict__ rope_sin,
                                     const int* __restrict__ row_slot, T* __restrict__ keys, T* __restrict__ values) {
  const size_t r = blockIdx.x;
  const int half = head_dim / 2;
  const int q_dim = n_heads * head_dim, kv_dim = n_kv_heads * head_dim;
  float* row = qkv + r * size_t(q_dim + 2 * kv_dim);
  const size_t angle_row = size_t(row_pos[r]) * size_t(half);
  const size_t cache_row = size_t(row_slot[r]) * size_t(kv_dim);
  for (int p = threadIdx.x; p < (n_heads + n_kv_heads) * half; p += blockDim.x) {
    const int head = p / half, i = p % half;
    int ia, ib;
    pair_index(i, head_dim, adjacent, ia, ib);
    float* h = row + head * head_dim;  // q heads, then k heads (k follows q in the row)
    const float a = h[ia], b = h[ib];
    const float c = rope_cos[angle_row + size_t(i)], s = rope_sin[angle_row + size_t(i)];
    const float a2 = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
    const float b2 = __fadd_rn(__fmul_rn(a, s), __fmul_rn(b, c));
    if (head < n_heads) {
      h[ia] = a2;
      h[ib] = b2;
    } else {
      const size_t k_off = cache_row + size_t((head - n_heads) * head_dim);
      keys[k_off + size_t(ia)] = from_float<T>(a2);
      keys[k_off + size_t(ib)] = from_float<T>(b2);
    }
  }
  const float* v = row + q_dim + kv_dim;
  for (int j = threadIdx.x; j < kv_dim; j += blockDim.x) values[cache_row + size_t(j)] = from_float<T>(v[j]);
}

}  // namespace

void launch_rope_kv_write(float* qkv, int rows, int n_heads, int n_kv_heads, int head_dim, RopeLayout layout,
                          const int* row_pos, const float* rope_cos, const float* rope_sin, const int* row_slot,
                          KVLayer kv, cudaStream_t stream) {
  if (rows == 0) return;
  const bool adjacent = layout == RopeLayout::AdjacentPairs;
  ASTRAI_DISPATCH_DTYPE(kv.dtype, ASTRAI_LAUNCH(rope_kv_write_kernel<Elem>, rows, 128, 0, stream)(
                                      qkv, n_heads, n_kv_heads, head_dim, adjacent, row_pos, rope_cos, rope_sin,
                                      row_slot, static_cast<Elem*>(kv.keys), static_cast<Elem*>(kv.values)));
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
