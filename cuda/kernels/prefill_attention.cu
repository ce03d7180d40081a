// Prefill attention: causal, grouped-query, online softmax in tiles, over a
// prompt chunk whose earlier positions (a cached prefix, earlier chunks) sit
// in pages. Reference: causal_attention() in reference/attention.cpp, for the
// batch rows of sequences with several rows in the batch.
//
// Grid (tile of up to kPrefillTileRows rows of one sequence, query head,
// split): a block loads each K/V tile once for all its rows. Causality is a
// per-row mask (row at position p sees keys 0..p); the block walks keys up to
// the largest position among its rows. Splits along the sequence use the
// same split_len as decode and are merged by attention_merge.cu, so a row
// gets the same bits here as it would as a decode row.
#include "cuda/cuda_check.h"
#include "cuda/kernels/attention_split.cuh"

namespace astrai::cuda {
namespace {

template <typename T>
__global__ void __launch_bounds__(kAttentionThreads)
    prefill_attention_kernel(const AttentionArgs a, const int* __restrict__ tile_first,
                             const int* __restrict__ tile_count, const int* __restrict__ tile_rows) {
  ASTRAI_DYNAMIC_SHARED(float, smem);
  const int tile = blockIdx.x, head = blockIdx.y, split = blockIdx.z;
  const int* rows = tile_rows + tile_first[tile];
  const int n = tile_count[tile];
  // Rows of one sequence come in increasing position order: the last is the furthest.
  const int max_pos = a.row_pos[rows[n - 1]];
  const int begin = split * a.split_len;
  if (begin > max_pos) return;  // the whole block exits
  const int end = min(begin + a.split_len, max_pos + 1);
  const int hd = a.head_dim, kv_head = head / (a.n_heads / a.n_kv_heads);
  const SplitSmem sm(smem, hd);
  SplitQueries& qs = *sm.queries;
  if (threadIdx.x == 0) qs.n = n;
  if (threadIdx.x < n) {
    const int r = rows[threadIdx.x];
    qs.pos[threadIdx.x] = a.row_pos[r];
    qs.out_slot[threadIdx.x] = (a.row_partial[r] * a.n_heads + head) * a.max_splits + split;
  }
  for (int e = threadIdx.x; e < n * hd; e += kAttentionThreads) {
    const int qi = e / hd, d = e % hd;
    sm.q[e] = a.q[size_t(rows[qi]) * size_t(a.q_stride) + size_t(head * hd + d)];
  }
  __syncthreads();
  const int* page_table = a.page_tables + size_t(a.row_seq[rows[0]]) * size_t(a.pages_per_seq);
  attend_split<T>(a, page_table, kv_head, begin, end, qs, sm);
}

}  // namespace

void launch_prefill_attention(const AttentionArgs& args, const int* tile_first, const int* tile_count,
                              const int* tile_rows, int n_tiles, cudaStream_t stream) {
  if (n_tiles == 0) return;
  const dim3 grid(unsigned(n_tiles), unsigned(args.n_heads), unsigned(args.max_splits));
  const size_t smem = size_t(attention_smem_floats(args.head_dim)) * sizeof(float);
  ASTRAI_DISPATCH_DTYPE(args.kv.dtype, {
    allow_attention_smem(prefill_attention_kernel<Elem>, smem);
    ASTRAI_LAUNCH(prefill_attention_kernel<Elem>, grid, kAttentionThreads, smem, stream)(args, tile_first, tile_count,
                                                                               tile_rows);
  });
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
