// RoPE fused with the write of K and V into their pages, and with what
// today's architectures do between the projection and RoPE. Reference:
// attention_block() in reference/forward.cpp:
//   q, k, v += their bias (Qwen 2; project())
//   each head of q and of k RMSNormed with q_norm / k_norm (Qwen 3; rmsnorm_heads())
//   a' = a cos(angle) - b sin(angle),  b' = a sin(angle) + b cos(angle)   (apply_rope())
// over the pairs (2i, 2i+1) (AdjacentPairs) or (i, i + head_dim/2) (RotateHalf),
// angle = pos * f_i (rope_frequencies(), Llama 3.1's scaling included),
// taken from a table the host fills with the reference's own float
// arithmetic; then write_kv(): K enters the cache already rotated.
// Explicitly rounded multiplies and adds (no FMA contraction), and each
// head's sum of squares in the reference's order (one thread per head, over
// i = 0, 1, ...), make the float32 result equal the reference's.
#include <stdexcept>

#include "cuda/cuda_check.h"
#include "cuda/kernels/dtype_device.cuh"
#include "cuda/kernels/kernels.h"

namespace astrai::cuda {
namespace {

__device__ __forceinline__ void pair_index(int i, int head_dim, bool adjacent, int& ia, int& ib) {
  ia = adjacent ? 2 * i : i;
  ib = adjacent ? 2 * i + 1 : i + head_dim / 2;
}

// Element j of a row of the q/k/v projection: the GEMM's output plus the bias (when there is one).
template <typename T>
__device__ __forceinline__ float projected(const float* row, const T* bias, int j) {
  return bias ? __fadd_rn(row[j], to_float(bias[j])) : row[j];
}

// One block per row. With q/k norms, first one thread per head (q heads, then
// k heads) sums its head's squares into inv_rms[head] (dynamic shared memory,
// n_heads + n_kv_heads floats); then the pairs of all q and k heads are spread
// over the threads.
template <typename T>
__global__ void rope_kv_write_kernel(float* __restrict__ qkv, int n_heads, int n_kv_heads, int head_dim,
                                     bool adjacent, const int* __restrict__ row_pos,
                                     const float* __restrict__ rope_cos, const float* __restrict__ rope_sin,
                                     const int* __restrict__ row_slot, T* __restrict__ keys, T* __restrict__ values,
                                     const T* __restrict__ bias, const T* __restrict__ q_norm,
                                     const T* __restrict__ k_norm, float eps) {
  ASTRAI_DYNAMIC_SHARED(float, inv_rms);
  const size_t r = blockIdx.x;
  const int half = head_dim / 2;
  const int q_dim = n_heads * head_dim, kv_dim = n_kv_heads * head_dim;
  float* row = qkv + r * size_t(q_dim + 2 * kv_dim);
  const size_t angle_row = size_t(row_pos[r]) * size_t(half);
  const size_t cache_row = size_t(row_slot[r]) * size_t(kv_dim);
  if (q_norm) {  // rmsnorm() of reference/rmsnorm.cpp on each head, its sum in the same order
    for (int head = threadIdx.x; head < n_heads + n_kv_heads; head += blockDim.x) {
      float sum_sq = 0.0f;
      for (int d = 0; d < head_dim; ++d) {
        const float x = projected(row, bias, head * head_dim + d);
        sum_sq = __fadd_rn(sum_sq, __fmul_rn(x, x));
      }
      inv_rms[head] = 1.0f / sqrtf(__fadd_rn(__fdiv_rn(sum_sq, float(head_dim)), eps));
    }
    __syncthreads();
  }
  for (int p = threadIdx.x; p < (n_heads + n_kv_heads) * half; p += blockDim.x) {
    const int head = p / half, i = p % half;
    int ia, ib;
    pair_index(i, head_dim, adjacent, ia, ib);
    float* h = row + head * head_dim;  // q heads, then k heads (k follows q in the row)
    float a = projected(row, bias, head * head_dim + ia), b = projected(row, bias, head * head_dim + ib);
    if (q_norm) {  // weight * (inv_rms * x), the reference's order
      const T* w = head < n_heads ? q_norm : k_norm;
      a = __fmul_rn(to_float(w[ia]), __fmul_rn(inv_rms[head], a));
      b = __fmul_rn(to_float(w[ib]), __fmul_rn(inv_rms[head], b));
    }
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
  for (int j = threadIdx.x; j < kv_dim; j += blockDim.x)
    values[cache_row + size_t(j)] = from_float<T>(projected(row, bias, q_dim + kv_dim + j));
}

}  // namespace

void launch_rope_kv_write(float* qkv, int rows, int n_heads, int n_kv_heads, int head_dim, RopeLayout layout,
                          const int* row_pos, const float* rope_cos, const float* rope_sin, const int* row_slot,
                          KVLayer kv, const PreRope& pre, cudaStream_t stream) {
  if (rows == 0) return;
  if ((pre.q_norm == nullptr) != (pre.k_norm == nullptr))
    throw std::invalid_argument("launch_rope_kv_write: q_norm and k_norm come together");
  const bool adjacent = layout == RopeLayout::AdjacentPairs;
  const size_t smem = pre.q_norm ? size_t(n_heads + n_kv_heads) * sizeof(float) : 0;
  ASTRAI_DISPATCH_DTYPE(kv.dtype, ASTRAI_LAUNCH(rope_kv_write_kernel<Elem>, rows, 128, smem, stream)(
                                      qkv, n_heads, n_kv_heads, head_dim, adjacent, row_pos, rope_cos, rope_sin,
                                      row_slot, static_cast<Elem*>(kv.keys), static_cast<Elem*>(kv.values),
                                      static_cast<const Elem*>(pre.bias), static_cast<const Elem*>(pre.q_norm),
                                      static_cast<const Elem*>(pre.k_norm), pre.eps));
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
