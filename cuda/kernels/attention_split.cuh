// The arithmetic both attention kernels share: up to kAttentionMaxQueries
// query vectors that use the same KV head of the same sequence, attended over
// the key positions [begin, end) of one split, with online softmax
// (Milakov & Gimelshein 2018) over tiles of kAttentionTile positions:
//   per tile:  m' = max(m, max_j s_j),  alpha = exp(m - m'),  p_j = exp(s_j - m'),
//              l' = l alpha + sum_j p_j,  acc' = acc alpha + sum_j p_j v_j
//   per split: o = acc / l,  lse = m + log(l)    (merged across splits by attention_merge.cu)
// with s_j = (q . k_j) * scale, and s_j = -inf for j > the query's position
// (causal) or j >= end.
//
// Why one shared routine: a query's result depends only on its vector, its
// position and the cache, never on which kernel ran it or on the other
// queries of the block (a fully masked tile leaves m, l and acc bit-for-bit
// unchanged: alpha = 1, p = 0). Every sum runs in a fixed order with
// explicitly rounded operations, so a row gets the same bits in a prefill
// chunk of any size and as a decode row: batch and chunking invariance.
#pragma once

#include <math_constants.h>

#include "cuda/cuda_check.h"
#include "cuda/kernels/dtype_device.cuh"
#include "cuda/kernels/kernels.h"

namespace astrai::cuda {

inline constexpr int kAttentionThreads = 128;
// Accumulator elements per thread: kAttentionMaxQueries * kAttentionMaxHeadDim / threads.
inline constexpr int kAccPerThread = kAttentionMaxQueries * kAttentionMaxHeadDim / kAttentionThreads;

// The queries of one block. The caller fills q (smem.q), pos and out_slot
// (the index of (row, head, split) in o_partial / lse_partial; -1: none)
// for queries [0, n), then calls attend_split().
struct SplitQueries {
  int n;
  int pos[kAttentionMaxQueries];
  int out_slot[kAttentionMaxQueries];
};
inline constexpr int kSplitQueriesFloats = int((sizeof(SplitQueries) + sizeof(float) - 1) / sizeof(float));

// Dynamic shared memory of one block, in floats (layout in SplitSmem). It is
// all of the block's shared memory (no static __shared__ in the attention
// kernels), so the opt-in below asks for exactly what the launch needs.
__host__ __device__ constexpr int attention_smem_floats(int head_dim) {
  return kSplitQueriesFloats                          // the SplitQueries
         + kAttentionMaxQueries * head_dim            // q
         + kAttentionTile * (head_dim + 1)            // k, rows padded by one float against bank conflicts
         + kAttentionTile * head_dim                  // v
         + kAttentionMaxQueries * kAttentionTile      // scores, then p
         + 3 * kAttentionMaxQueries;                  // m, l, alpha
}

struct SplitSmem {
  SplitQueries* queries;
  float* q;
  float* k;
  float* v;
  float* p;
  float* m;
  float* l;
  float* alpha;
  __device__ SplitSmem(float* base, int head_dim)
      : queries(reinterpret_cast<SplitQueries*>(base)),
        q(base + kSplitQueriesFloats),
        k(q + kAttentionMaxQueries * head_dim),
        v(k + kAttentionTile * (head_dim + 1)),
        p(v + kAttentionTile * head_dim),
        m(p + kAttentionMaxQueries * kAttentionTile),
        l(m + kAttentionMaxQueries),
        alpha(l + kAttentionMaxQueries) {}
};

template <typename T>
__device__ __forceinline__ void load_kv_tile(const AttentionArgs& a, const int* page_table, int kv_head, int j0,
                                             int end, const SplitSmem& sm) {
  const int hd = a.head_dim, kv_dim = a.n_kv_heads * hd;
  const T* keys = static_cast<const T*>(a.kv.keys);
  const T* values = static_cast<const T*>(a.kv.values);
  for (int e = threadIdx.x; e < kAttentionTile * hd; e += kAttentionThreads) {
    const int j = e / hd, d = e % hd, pos = j0 + j;
    float kf = 0.0f, vf = 0.0f;  // zeros beyond `end`: p = 0 there, and 0 * 0 keeps acc exact
    if (pos < end) {
      const size_t slot = size_t(page_table[pos / a.page_size]) * size_t(a.page_size) + size_t(pos % a.page_size);
      const size_t at = slot * size_t(kv_dim) + size_t(kv_head * hd + d);
      kf = to_float(keys[at]);
      vf = to_float(values[at]);
    }
    sm.k[j * (hd + 1) + d] = kf;
    sm.v[j * hd + d] = vf;
  }
}

// s[qi][j] for every (query, position) pair of the tile; a warp covers one
// query's 32 positions. The dot product runs over d in order, with fmaf.
__device__ __forceinline__ void tile_scores(const AttentionArgs& a, const SplitQueries& qs, int j0, int end,
                                            const SplitSmem& sm) {
  const int hd = a.head_dim;
  for (int e = threadIdx.x; e < qs.n * kAttentionTile; e += kAttentionThreads) {
    const int qi = e / kAttentionTile, j = e % kAttentionTile, pos = j0 + j;
    float s = -CUDART_INF_F;
    if (pos < end && pos <= qs.pos[qi]) {
      float dot = 0.0f;
      for (int d = 0; d < hd; ++d) dot = __fmaf_rn(sm.q[qi * hd + d], sm.k[j * (hd + 1) + d], dot);
      s = __fmul_rn(dot, a.scale);
    }
    sm.p[qi * kAttentionTile + j] = s;
  }
}

// Turns the tile's scores into p_j in place and updates m, l; one thread per query.
__device__ __forceinline__ void tile_softmax(const SplitQueries& qs, const SplitSmem& sm) {
  const int qi = threadIdx.x;
  if (qi >= qs.n) return;
  float* s = sm.p + qi * kAttentionTile;
  float tile_max = -CUDART_INF_F;
  for (int j = 0; j < kAttentionTile; ++j) tile_max = fmaxf(tile_max, s[j]);
  const float m_old = sm.m[qi], m_new = fmaxf(m_old, tile_max);
  if (m_new == -CUDART_INF_F) {  // nothing visible yet: leave everything as it is
    for (int j = 0; j < kAttentionTile; ++j) s[j] = 0.0f;
    sm.alpha[qi] = 1.0f;
    return;
  }
  float sum = 0.0f;
  for (int j = 0; j < kAttentionTile; ++j) {
    const float p = s[j] == -CUDART_INF_F ? 0.0f : expf(__fsub_rn(s[j], m_new));
    s[j] = p;
    sum = __fadd_rn(sum, p);
  }
  const float alpha = expf(__fsub_rn(m_old, m_new));  // exp(-inf) = 0 on the first visible tile
  sm.alpha[qi] = alpha;
  sm.l[qi] = __fadd_rn(__fmul_rn(sm.l[qi], alpha), sum);
  sm.m[qi] = m_new;
}

// acc[(qi, d)] = acc alpha + sum_j p_j v_j[d]; thread t owns elements t, t + 128, ...
__device__ __forceinline__ void tile_accumulate(int head_dim, const SplitQueries& qs, const SplitSmem& sm,
                                                float (&acc)[kAccPerThread]) {
#pragma unroll
  for (int k = 0; k < kAccPerThread; ++k) {
    const int e = threadIdx.x + k * kAttentionThreads;
    if (e < qs.n * head_dim) {
      const int qi = e / head_dim, d = e % head_dim;
      float x = __fmul_rn(acc[k], sm.alpha[qi]);
      for (int j = 0; j < kAttentionTile; ++j)
        x = __fmaf_rn(sm.p[qi * kAttentionTile + j], sm.v[j * head_dim + d], x);
      acc[k] = x;
    }
  }
}

// The split [begin, end) for the queries in `qs` (whose vectors are already
// in sm.q). Writes o = acc / l and lse = m + log(l) of every query that saw
// at least one position; ends with a __syncthreads().
template <typename T>
__device__ void attend_split(const AttentionArgs& a, const int* page_table, int kv_head, int begin, int end,
                             const SplitQueries& qs, const SplitSmem& sm) {
  const int hd = a.head_dim;
  float acc[kAccPerThread];
#pragma unroll
  for (int k = 0; k < kAccPerThread; ++k) acc[k] = 0.0f;
  if (threadIdx.x < kAttentionMaxQueries) {
    sm.m[threadIdx.x] = -CUDART_INF_F;
    sm.l[threadIdx.x] = 0.0f;
  }
  for (int j0 = begin; j0 < end; j0 += kAttentionTile) {
    __syncthreads();  // the previous tile's k, v and p are no longer read
    load_kv_tile<T>(a, page_table, kv_head, j0, end, sm);
    __syncthreads();
    tile_scores(a, qs, j0, end, sm);
    __syncthreads();
    tile_softmax(qs, sm);
    __syncthreads();
    tile_accumulate(hd, qs, sm, acc);
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < kAccPerThread; ++k) {
    const int e = threadIdx.x + k * kAttentionThreads;
    if (e < qs.n * hd) {
      const int qi = e / hd, d = e % hd;
      if (qs.out_slot[qi] >= 0 && sm.l[qi] > 0.0f)
        a.o_partial[size_t(qs.out_slot[qi]) * size_t(hd) + size_t(d)] = __fdiv_rn(acc[k], sm.l[qi]);
    }
  }
  if (threadIdx.x < qs.n && qs.out_slot[threadIdx.x] >= 0 && sm.l[threadIdx.x] > 0.0f)
    a.lse_partial[qs.out_slot[threadIdx.x]] = __fadd_rn(sm.m[threadIdx.x], logf(sm.l[threadIdx.x]));
  __syncthreads();
}

// Opts a kernel into more than 48 KiB of dynamic shared memory when the head
// dimension needs it (head_dim > 145). The kernels have no static shared
// memory, so `bytes` is the block's whole need (a GPU refuses a launch whose
// static plus dynamic shared memory passes 48 KiB without the opt-in). A
// refusal is an error, not a silent launch failure later.
template <typename Kernel>
inline void allow_attention_smem(Kernel kernel, size_t bytes) {
  if (bytes > 48 * 1024)
    ASTRAI_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
}

}  // namespace astrai::cuda
