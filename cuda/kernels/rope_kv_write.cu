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
#include "cuda/kernels/vector_access.cuh"

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

// Heads of one row a block handles: at one decode row Llama-3-8B's 32 q, 8 k
// and 8 v heads make 12 blocks instead of one.
constexpr int kHeadsPerBlock = 4;
constexpr int kThreads = 128;

// Block (r, g) takes heads g * kHeadsPerBlock ... of row r, counting the q
// heads, then the k heads, then the v heads. With q/k norms, first one
// thread per q or k head sums its head's squares into inv_rms[head - first]
// (dynamic shared memory, kHeadsPerBlock floats); then the block's rotation
// pairs of q and k heads and its v elements are spread over the threads.
// Adjacent pairs (2i, 2i+1) are one 8-byte load and one store of q (and one
// store of K); rotate-half pairs (i, i + head_dim/2) are two of each, each
// coalesced over consecutive i.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    rope_kv_write_kernel(float* __restrict__ qkv, int n_heads, int n_kv_heads, int head_dim, bool adjacent,
                         const int* __restrict__ row_pos, const float* __restrict__ rope_cos,
                         const float* __restrict__ rope_sin, const int* __restrict__ row_slot, T* __restrict__ keys,
                         T* __restrict__ values, const T* __restrict__ bias, const T* __restrict__ q_norm,
                         const T* __restrict__ k_norm, float eps, float norm_offset) {
  ASTRAI_DYNAMIC_SHARED(float, inv_rms);
  const size_t r = blockIdx.x;
  const int half = head_dim / 2;
  const int q_dim = n_heads * head_dim, kv_dim = n_kv_heads * head_dim;
  const int rotated = n_heads + n_kv_heads;  // q and k heads
  const int first = int(blockIdx.y) * kHeadsPerBlock;
  const int last = min(first + kHeadsPerBlock, rotated + n_kv_heads);
  float* row = qkv + r * size_t(q_dim + 2 * kv_dim);
  const size_t angle_row = size_t(row_pos[r]) * size_t(half);
  const size_t cache_row = size_t(row_slot[r]) * size_t(kv_dim);
  if (q_norm) {  // rmsnorm() of reference/rmsnorm.cpp on each head, its sum in the same order
    for (int head = first + int(threadIdx.x); head < min(last, rotated); head += kThreads) {
      float sum_sq = 0.0f;
      for (int d = 0; d < head_dim; ++d) {
        const float x = projected(row, bias, head * head_dim + d);
        sum_sq = __fadd_rn(sum_sq, __fmul_rn(x, x));
      }
      inv_rms[head - first] = 1.0f / sqrtf(__fadd_rn(__fdiv_rn(sum_sq, float(head_dim)), eps));
    }
    __syncthreads();
  }
  const int rotated_pairs = (min(last, rotated) - first) * half;  // <= 0 when the block has v heads only
  for (int p = int(threadIdx.x); p < rotated_pairs; p += kThreads) {
    const int head = first + p / half, i = p % half;
    int ia, ib;
    pair_index(i, head_dim, adjacent, ia, ib);
    float* h = row + head * head_dim;  // q heads, then k heads (k follows q in the row)
    float a, b;
    if (adjacent && !bias) {
      const float2 ab = *ASTRAI_VECTOR_PTR(const float2, h + ia);  // ia even, rows of even length
      a = ab.x, b = ab.y;
    } else {
      a = projected(row, bias, head * head_dim + ia), b = projected(row, bias, head * head_dim + ib);
    }
    if (q_norm) {  // weight * (inv_rms * x), the reference's order; Gemma's weight is 1 + w, in float
      const T* w = head < n_heads ? q_norm : k_norm;
      float wa = to_float(w[ia]), wb = to_float(w[ib]);
      if (norm_offset != 0.0f) wa = __fadd_rn(norm_offset, wa), wb = __fadd_rn(norm_offset, wb);
      a = __fmul_rn(wa, __fmul_rn(inv_rms[head - first], a));
      b = __fmul_rn(wb, __fmul_rn(inv_rms[head - first], b));
    }
    const float c = rope_cos[angle_row + size_t(i)], s = rope_sin[angle_row + size_t(i)];
    const float a2 = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
    const float b2 = __fadd_rn(__fmul_rn(a, s), __fmul_rn(b, c));
    if (head < n_heads) {
      if (adjacent) {
        store2(h + ia, a2, b2);
      } else {
        h[ia] = a2;
        h[ib] = b2;
      }
    } else {
      const size_t k_off = cache_row + size_t((head - n_heads) * head_dim);
      if (adjacent) {  // kv_dim and ia even: the pair starts on two elements
        store2(keys + k_off + size_t(ia), a2, b2);
      } else {
        keys[k_off + size_t(ia)] = from_float<T>(a2);
        keys[k_off + size_t(ib)] = from_float<T>(b2);
      }
    }
  }
  // The block's v heads: v element j of the row is q_dim + kv_dim + j.
  const int v_begin = (max(first, rotated) - rotated) * head_dim, v_end = (max(last, rotated) - rotated) * head_dim;
  for (int j = v_begin + int(threadIdx.x); j < v_end; j += kThreads)
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
  const size_t smem = pre.q_norm ? kHeadsPerBlock * sizeof(float) : 0;
  const dim3 grid(unsigned(rows), unsigned((n_heads + 2 * n_kv_heads + kHeadsPerBlock - 1) / kHeadsPerBlock));
  ASTRAI_DISPATCH_DTYPE(kv.dtype, ASTRAI_LAUNCH(rope_kv_write_kernel<Elem>, grid, kThreads, smem, stream)(
                                      qkv, n_heads, n_kv_heads, head_dim, adjacent, row_pos, rope_cos, rope_sin,
                                      row_slot, static_cast<Elem*>(kv.keys), static_cast<Elem*>(kv.values),
                                      static_cast<const Elem*>(pre.bias), static_cast<const Elem*>(pre.q_norm),
                                      static_cast<const Elem*>(pre.k_norm), pre.eps, pre.norm_offset));
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
