// The arithmetic both attention kernels share (after FlashDecoding and
// FlashInfer's decode kernel; design and byte math in docs/cuda.md): up to
// kAttentionMaxQueries query vectors that use the same KV head of the same
// sequence, each attending over its own key range [begin, end) of one split,
// with online softmax (Milakov & Gimelshein 2018) over tiles of kAttentionTile
// positions:
//   per tile:  m' = max(m, max_j s_j),  alpha = exp(m - m'),  p_j = exp(s_j - m'),
//              l' = l alpha + sum_j p_j,  acc' = acc alpha + sum_j p_j v_j
//   per split: o = acc / l,  lse = m + log(l)    (merged across splits by attention_merge.cu)
// with s_j = (q . k_j) * scale for begin <= j < end, and -inf elsewhere
// (end <= the query's position + 1: causality is the range's end).
//
// Work split. The block's 128 threads load K/V tiles into shared memory as
// the cache stores them (bf16 stays bf16), 16 bytes a copy (cp.async on the
// GPU), in a ring of 2 or 3 tiles so the next tiles' loads overlap this
// tile's arithmetic; one barrier per tile. Each warp owns the queries
// w, w + 4, w + 8, w + 12 and keeps each one's q, acc, m and l in registers.
// Within a warp, `lanes` consecutive lanes cover one position's head_dim
// (each lane one or two 16-byte chunks), so 32 / lanes positions go at once;
// each lane leaves its chunks' share of a dot product in the warp's scratch,
// and lane j adds position j's shares in lane order. For the softmax lane j
// holds position j of the tile: the tile's max and sum are butterflies of
// __shfl_xor_sync over the warp; p_j goes back through the scratch to the
// lanes that hold V's chunks. Three __syncwarp() per tile and query.
//
// What stays exact. Every operation of a query is in an order fixed by the
// head_dim, the storage type and the query's own range, never by which
// kernel runs it, which warp or register slot holds it, or what the other
// queries of the block are: a tile outside the query's range is skipped (it
// would leave m, l and acc as they are), and inside it a masked position has
// p = 0, so its V (zeros past the block's range in decode, the cache's
// finite values in prefill) adds 0 * v = 0. Split boundaries come from the
// row's own position (split_len_of() in kernels.h). So a row gets the same
// bits in a prefill chunk of any size and as a decode row, in a batch of any
// size: batch and chunking invariance (tests/cuda/test_attention.cpp). The
// same inputs give the same bits on every run: no atomics, fixed trees.
#pragma once

#include <math_constants.h>

#include "cuda/cuda_check.h"
#include "cuda/kernels/dtype_device.cuh"
#include "cuda/kernels/kernels.h"
#include "cuda/kernels/async_copy.cuh"  // after dtype_device.cuh, which sets up the emulated built-ins
#include "cuda/kernels/vector_pointer.cuh"

namespace astrai::cuda {

inline constexpr int kAttentionThreads = 128;
inline constexpr int kAttentionWarps = kAttentionThreads / 32;
// Blocks of one SM the kernels are built for (__launch_bounds__): three
// blocks' shared memory (58,368 B each for bf16 at head_dim 128) fit an
// H100/H200 SM's 228 KiB, and the bound lets ptxas use up to 168 registers
// a thread, which the float32 instances need to keep their queries'
// registers without spilling (at the default bound they spill).
inline constexpr int kAttentionBlocksPerSM = 3;
inline constexpr int kQueriesPerWarp = kAttentionMaxQueries / kAttentionWarps;
inline constexpr unsigned kFullWarp = 0xffffffffu;
// Elements of q (and of acc) one lane holds per query: one 16-byte chunk of
// bf16 or two of float32 (head_dim <= 256 has at most 32 resp. 64 chunks).
inline constexpr int kLaneElems = 8;
static_assert(kAttentionTile == 32, "the softmax gives position j of a tile to lane j");

// Elements of one 16-byte chunk of the cache's type.
template <typename T>
inline constexpr int kChunkElems = int(16 / sizeof(T));

// How a launch lays out one tile; the same for every block of the launch.
struct TileShape {
  int head_dim;
  int padded;     // head_dim rounded up to a chunk: the row length in shared memory (zeros past head_dim)
  int chunks;     // padded / chunk elements
  int lanes;      // lanes per position: the power of two >= chunks, at most 32
  int per_lane;   // chunks per lane: 1, or 2 for float32 past head_dim 128
  int stages;     // tiles in the shared-memory ring: 3 when they fit 48 KiB, else 2
  bool vector;    // rows of whole chunks: 16-byte copies from the cache (else one element a copy)
};

template <typename T>
__host__ __device__ constexpr TileShape tile_shape(int head_dim) {
  TileShape s{};
  s.head_dim = head_dim;
  s.vector = head_dim % kChunkElems<T> == 0;
  s.padded = (head_dim + kChunkElems<T> - 1) / kChunkElems<T> * kChunkElems<T>;
  s.chunks = s.padded / kChunkElems<T>;
  s.lanes = 1;
  while (s.lanes < s.chunks && s.lanes < 32) s.lanes *= 2;
  s.per_lane = (s.chunks + s.lanes - 1) / s.lanes;
  const int tile_bytes = 2 * kAttentionTile * s.padded * int(sizeof(T));  // K and V
  s.stages = 3 * tile_bytes <= 48 * 1024 ? 3 : 2;
  return s;
}

// A warp's scratch in shared memory: the lanes' partial dot products
// (position j's at dots[j * (lanes + 1) + sub]; the odd row stride keeps
// both the writes and lane j's reads free of bank conflicts), then the
// tile's p_j.
__host__ __device__ constexpr int warp_scratch_floats(int lanes) { return kAttentionTile * (lanes + 1) + kAttentionTile; }

// Dynamic shared memory of one block: the ring of K and V tiles, then each
// warp's scratch (warp_scratch_floats() above). It is all of
// the block's shared memory (no static __shared__), so the opt-in below asks
// for exactly what the launch needs.
template <typename T>
__host__ __device__ constexpr int attention_smem_bytes(int head_dim) {
  const TileShape s = tile_shape<T>(head_dim);
  return s.stages * 2 * kAttentionTile * s.padded * int(sizeof(T)) +
         kAttentionWarps * warp_scratch_floats(s.lanes) * int(sizeof(float));
}

// One query of a split, as the kernel hands it over: its vector, its key
// range [begin, end) in this split (empty: begin == end) and where its
// partial result goes (the index of (row, head, split) in o_partial).
struct SplitQuery {
  const float* q = nullptr;
  int begin = 0, end = 0, out_slot = -1;
};

// ---- 16-byte copies into shared memory ----

// Waits until at most `pending` (0 or 1) of the latest committed groups of this thread's copies are in flight.
__device__ __forceinline__ void wait_copies(int pending) {
  if (pending == 0)
    cp_async_wait<0>();
  else
    cp_async_wait<1>();
}

__device__ __forceinline__ void zero_16(void* smem) {
  uint4 zero;
  zero.x = zero.y = zero.z = zero.w = 0u;
  *static_cast<uint4*>(smem) = zero;
}

// One 16-byte chunk of shared memory as floats (exact: bf16 -> float loses nothing).
__device__ __forceinline__ void chunk_to_float(const float* p, float* out) {
  const float4 v = *ASTRAI_VECTOR_PTR(const float4, p);
  out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
}
__device__ __forceinline__ void chunk_to_float(const __nv_bfloat16* p, float* out) {
  const uint4 v = *ASTRAI_VECTOR_PTR(const uint4, p);
  const unsigned words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {  // a bf16 is the high half of its float
    out[2 * i] = __int_as_float(int(words[i] << 16));
    out[2 * i + 1] = __int_as_float(int(words[i] & 0xffff0000u));
  }
}

// ---- one tile ----

// K and V of positions [j0, j0 + kAttentionTile) into k_dst, v_dst (rows of
// shape.padded elements), zeros at positions >= end. Lane j of each warp
// looks up position j0 + j's cache row once (a page-table load, a division)
// and hands it to the lanes that copy that row's chunks by shuffle.
template <typename T>
__device__ __forceinline__ void load_kv_tile(const AttentionArgs& a, const TileShape& shape, const int* page_table,
                                             int kv_head, int j0, int end, T* k_dst, T* v_dst) {
  const int lane = int(threadIdx.x) & 31, pos = j0 + lane;
  const int my_row = pos < end ? page_table[pos / a.page_size] * a.page_size + pos % a.page_size : -1;
  const size_t kv_dim = size_t(a.n_kv_heads) * size_t(shape.head_dim);
  const T* keys = static_cast<const T*>(a.kv.keys) + size_t(kv_head) * size_t(shape.head_dim);
  const T* values = static_cast<const T*>(a.kv.values) + size_t(kv_head) * size_t(shape.head_dim);
  const int per_row = shape.vector ? shape.chunks : shape.padded;  // copies per row
  const int copies = kAttentionTile * per_row;
  // A trip count the same for every lane: the shuffle needs the whole warp.
  for (int e0 = 0; e0 < copies; e0 += kAttentionThreads) {
    const int e = e0 + int(threadIdx.x);
    const int j = (e < copies ? e : copies - 1) / per_row, c = e - j * per_row;
    const int row = __shfl_sync(kFullWarp, my_row, j);
    if (e >= copies) continue;
    if (shape.vector) {
      T* kd = k_dst + j * shape.padded + c * kChunkElems<T>;
      T* vd = v_dst + j * shape.padded + c * kChunkElems<T>;
      if (row >= 0) {
        const size_t at = size_t(row) * kv_dim + size_t(c * kChunkElems<T>);
        cp_async_16(kd, keys + at);
        cp_async_16(vd, values + at);
      } else {
        zero_16(kd);
        zero_16(vd);
      }
    } else {  // head_dim not a whole number of chunks (e.g. 146): element by element, zeros past head_dim
      const bool inside = row >= 0 && c < shape.head_dim;
      const size_t at = size_t(row) * kv_dim + size_t(c);
      k_dst[j * shape.padded + c] = inside ? keys[at] : from_float<T>(0.0f);
      v_dst[j * shape.padded + c] = inside ? values[at] : from_float<T>(0.0f);
    }
  }
}

// One query's running state; every lane holds m and l, and its own chunks of q and acc.
struct QueryState {
  float q[kLaneElems];
  float acc[kLaneElems];
  float m, l;
};

// The tile at j0 (K in k, V in v) for one query whose range meets it.
template <typename T>
__device__ __forceinline__ void attend_tile(const TileShape& shape, float scale, const T* k, const T* v, int j0,
                                            const SplitQuery& query, QueryState& st, float* scratch) {
  constexpr int kVec = kChunkElems<T>;
  const int lane = int(threadIdx.x) & 31, lanes = shape.lanes;
  const int group = lane / lanes, sub = lane % lanes;
  float* dots = scratch;
  float* probs = scratch + kAttentionTile * (lanes + 1);
  // Scores. Group g holds positions g * lanes .. g * lanes + lanes - 1, one a
  // pass; each lane leaves the dot product of its chunks in `dots`.
  for (int i = 0; i < lanes; ++i) {
    const int j = group * lanes + i;
    const T* row = k + j * shape.padded;
    float dot = 0.0f;
#pragma unroll
    for (int c = 0; c < kLaneElems / kVec; ++c) {
      const int chunk = sub + c * lanes;
      if (c < shape.per_lane && chunk < shape.chunks) {
        float kf[kVec];
        chunk_to_float(row + chunk * kVec, kf);
#pragma unroll
        for (int e = 0; e < kVec; ++e) dot = __fmaf_rn(st.q[c * kVec + e], kf[e], dot);
      }
    }
    dots[j * (lanes + 1) + sub] = dot;
  }
  __syncwarp();
  // Lane j: position j0 + j; its score is the sum of its lanes' dot products, in lane order.
  const int pos = j0 + lane;
  float s = -CUDART_INF_F;
  if (pos >= query.begin && pos < query.end) {
    float dot = 0.0f;
    for (int x = 0; x < lanes; ++x) dot = __fadd_rn(dot, dots[lane * (lanes + 1) + x]);
    s = __fmul_rn(dot, scale);
  }
  float tile_max = s;
  for (int off = 16; off > 0; off /= 2) tile_max = fmaxf(tile_max, __shfl_xor_sync(kFullWarp, tile_max, off));
  const float m_new = fmaxf(st.m, tile_max);  // finite: the range meets the tile, and begin <= the query's position
  const float p = s == -CUDART_INF_F ? 0.0f : expf(__fsub_rn(s, m_new));
  float sum = p;
  for (int off = 16; off > 0; off /= 2) sum = __fadd_rn(sum, __shfl_xor_sync(kFullWarp, sum, off));
  const float alpha = expf(__fsub_rn(st.m, m_new));  // exp(-inf) = 0 on the query's first tile
  st.l = __fadd_rn(__fmul_rn(st.l, alpha), sum);
  st.m = m_new;
  probs[lane] = p;
  __syncwarp();
  // acc = acc alpha + sum_j p_j v_j, each group over its positions (folded at the split's end).
#pragma unroll
  for (int x = 0; x < kLaneElems; ++x) st.acc[x] = __fmul_rn(st.acc[x], alpha);
  for (int i = 0; i < lanes; ++i) {
    const int j = group * lanes + i;
    const float pj = probs[j];
    const T* row = v + j * shape.padded;
#pragma unroll
    for (int c = 0; c < kLaneElems / kVec; ++c) {
      const int chunk = sub + c * lanes;
      if (c < shape.per_lane && chunk < shape.chunks) {
        float vf[kVec];
        chunk_to_float(row + chunk * kVec, vf);
#pragma unroll
        for (int e = 0; e < kVec; ++e) st.acc[c * kVec + e] = __fmaf_rn(pj, vf[e], st.acc[c * kVec + e]);
      }
    }
  }
  __syncwarp();  // every lane has read dots and probs before the next query or tile writes them
}

// q into registers (zeros past head_dim), m = -inf, l = 0, acc = 0.
template <typename T>
__device__ __forceinline__ void start_query(const TileShape& shape, const SplitQuery& query, QueryState& st) {
  constexpr int kVec = kChunkElems<T>;
  const int lane = int(threadIdx.x) & 31, sub = lane % shape.lanes;
  // 16-byte loads where head_dim is whole chunks and q is aligned (the
  // executor's q rows are): the lanes' loads are then contiguous.
  const bool vector = shape.vector && (reinterpret_cast<size_t>(query.q) & 15u) == 0;
#pragma unroll
  for (int c = 0; c < kLaneElems / kVec; ++c) {
    const int d0 = (sub + c * shape.lanes) * kVec;
    const bool live = query.begin < query.end && c < shape.per_lane && d0 < shape.head_dim;
    if (live && vector) {
#pragma unroll
      for (int e = 0; e < kVec; e += 4) {
        const float4 x = *ASTRAI_VECTOR_PTR(const float4, query.q + d0 + e);
        st.q[c * kVec + e] = x.x, st.q[c * kVec + e + 1] = x.y, st.q[c * kVec + e + 2] = x.z,
                        st.q[c * kVec + e + 3] = x.w;
      }
    } else {
#pragma unroll
      for (int e = 0; e < kVec; ++e) st.q[c * kVec + e] = live && d0 + e < shape.head_dim ? query.q[d0 + e] : 0.0f;
    }
#pragma unroll
    for (int e = 0; e < kVec; ++e) st.acc[c * kVec + e] = 0.0f;
  }
  st.m = -CUDART_INF_F;
  st.l = 0.0f;
}

// o = acc / l and lse = m + log(l), once the groups' partial sums are folded.
template <typename T>
__device__ __forceinline__ void finish_query(const AttentionArgs& a, const TileShape& shape, const SplitQuery& query,
                                             QueryState& st) {
  constexpr int kVec = kChunkElems<T>;
  const int lane = int(threadIdx.x) & 31, sub = lane % shape.lanes;
  for (int off = shape.lanes; off < 32; off *= 2)
#pragma unroll
    for (int x = 0; x < kLaneElems; ++x) st.acc[x] = __fadd_rn(st.acc[x], __shfl_xor_sync(kFullWarp, st.acc[x], off));
  if (query.out_slot < 0 || !(st.l > 0.0f) || lane >= shape.lanes) return;
  float* o = a.o_partial + size_t(query.out_slot) * size_t(shape.head_dim);
  const bool vector = shape.vector && (reinterpret_cast<size_t>(o) & 15u) == 0;
#pragma unroll
  for (int c = 0; c < kLaneElems / kVec; ++c) {
    const int d0 = (sub + c * shape.lanes) * kVec;
    if (c >= shape.per_lane || d0 >= shape.head_dim) continue;
    float x[kVec];
#pragma unroll
    for (int e = 0; e < kVec; ++e) x[e] = __fdiv_rn(st.acc[c * kVec + e], st.l);
    if (vector) {
#pragma unroll
      for (int e = 0; e < kVec; e += 4)
        *ASTRAI_VECTOR_PTR(float4, o + d0 + e) = make_float4(x[e], x[e + 1], x[e + 2], x[e + 3]);
    } else {
#pragma unroll
      for (int e = 0; e < kVec; ++e)
        if (d0 + e < shape.head_dim) o[d0 + e] = x[e];
    }
  }
  if (lane == 0) a.lse_partial[query.out_slot] = __fadd_rn(st.m, logf(st.l));
}

// The split for this warp's queries (mine[0 .. n_mine)), over the block's key
// range [walk_begin, walk_end): the union of its queries' ranges, walk_begin a
// multiple of kAttentionTile. Every thread of the block calls it with the
// same walk range; smem is the block's dynamic shared memory.
template <typename T>
__device__ void attend_split(const AttentionArgs& a, const int* page_table, int kv_head, int walk_begin, int walk_end,
                             const SplitQuery (&mine)[kQueriesPerWarp], int n_mine, T* smem) {
  const TileShape shape = tile_shape<T>(a.head_dim);
  const int tile_elems = kAttentionTile * shape.padded;
  const int n_tiles = (walk_end - walk_begin + kAttentionTile - 1) / kAttentionTile;
  float* scratch = reinterpret_cast<float*>(smem + shape.stages * 2 * tile_elems) +
                   (int(threadIdx.x) / 32) * warp_scratch_floats(shape.lanes);
  QueryState st[kQueriesPerWarp];
#pragma unroll
  for (int k = 0; k < kQueriesPerWarp; ++k)
    if (k < n_mine) start_query<T>(shape, mine[k], st[k]);
  // The ring: tile t in slot t % stages (K then V); stages - 1 tiles in flight ahead.
  const auto load = [&](int t) {
    if (t < n_tiles) {
      T* k_dst = smem + 2 * (t % shape.stages) * tile_elems;
      load_kv_tile<T>(a, shape, page_table, kv_head, walk_begin + t * kAttentionTile, walk_end, k_dst,
                      k_dst + tile_elems);
    }
    cp_async_commit();  // an empty group past the last tile keeps the count of groups in flight the same
  };
  for (int t = 0; t < shape.stages - 1; ++t) load(t);
  for (int t = 0; t < n_tiles; ++t) {
    wait_copies(shape.stages - 2);  // this thread's copies of tile t have landed
    __syncthreads();                // everyone's have; and everyone is done with tile t - 1's slot
    load(t + shape.stages - 1);     // into tile t - 1's slot
    const int j0 = walk_begin + t * kAttentionTile;
    const T* k = smem + 2 * (t % shape.stages) * tile_elems;
#pragma unroll
    for (int q = 0; q < kQueriesPerWarp; ++q)
      if (q < n_mine && j0 < mine[q].end && j0 + kAttentionTile > mine[q].begin)
        attend_tile<T>(shape, a.scale, k, k + tile_elems, j0, mine[q], st[q], scratch);
  }
#pragma unroll
  for (int k = 0; k < kQueriesPerWarp; ++k)
    if (k < n_mine) finish_query<T>(a, shape, mine[k], st[k]);
}

// Opts a kernel into more than 48 KiB of dynamic shared memory when the
// launch needs it (attention_smem_bytes(): 58,368 B for bf16 at head_dim
// 128, so nearly always). The kernels have no static shared memory, so `bytes` is the block's
// whole need (a GPU refuses a launch whose static plus dynamic shared memory
// passes 48 KiB without the opt-in). A refusal is an error, not a silent
// launch failure later.
template <typename Kernel>
inline void allow_attention_smem(Kernel kernel, size_t bytes) {
  if (bytes > 48 * 1024)
    ASTRAI_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
}

}  // namespace astrai::cuda
