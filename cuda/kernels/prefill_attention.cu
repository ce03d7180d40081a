// Prefill attention: causal, grouped-query, online softmax in tiles, over a
// prompt chunk whose earlier positions (a cached prefix, earlier chunks) sit
// in pages. Reference: causal_attention() in reference/attention.cpp, for the
// batch rows of sequences with several rows in the batch.
//
// Grid (tile of up to kPrefillTileRows rows of one sequence, query head,
// split): a block loads each K/V tile once for all its rows; warp w takes
// rows w, w + 4, ... Each row keeps its own split boundaries
// (split_len_of() of its own position, as a decode row would), and the block
// walks the union of its rows' ranges; a row skips the tiles outside its
// range, so it gets the same bits here as it would as a decode row
// (attention_split.cuh). The splits are merged by attention_merge.cu.
//
// Not tuned for prefill's arithmetic: scores and p v run on the FMA units,
// one query per warp at a time, and a GQA group's query heads each read
// their K/V tile (from L2 after the first). Tensor-core tiles (mma) are the
// next step for long prompts (docs/cuda.md).
#include "cuda/cuda_check.h"
#include "cuda/kernels/attention_split.cuh"

namespace astrai::cuda {
namespace {

template <typename T>
__global__ void __launch_bounds__(kAttentionThreads, kAttentionBlocksPerSM)
    prefill_attention_kernel(const AttentionArgs a, const int* __restrict__ tile_first,
                             const int* __restrict__ tile_count, const int* __restrict__ tile_rows) {
  ASTRAI_DYNAMIC_SHARED(uint4, smem);  // uint4: 16-byte aligned, one declaration for every T
  const int tile = int(blockIdx.x), head = int(blockIdx.y), split = int(blockIdx.z);
  const int* rows = tile_rows + tile_first[tile];
  const int n = tile_count[tile], warp = int(threadIdx.x) / 32;
  // Every thread computes the block's walk (the union of the rows' ranges in this split).
  int walk_begin = 0x7fffffff, walk_end = 0;
  for (int qi = 0; qi < n; ++qi) {
    const int pos = a.row_pos[rows[qi]];
    const RowSplits splits = row_splits(pos, a.window, a.min_split_len, a.max_splits);
    if (split >= splits.count) continue;  // the row has no such split
    walk_begin = min(walk_begin, splits.walk_begin(split));  // on a tile boundary, as attend_split needs
    walk_end = max(walk_end, splits.end(split, pos));
  }
  if (walk_end == 0) return;  // the whole block exits
  SplitQuery mine[kQueriesPerWarp];
  int n_mine = 0;
#pragma unroll
  for (int k = 0; k < kQueriesPerWarp; ++k) {
    const int qi = warp + k * kAttentionWarps;
    if (qi >= n) break;
    const int r = rows[qi], pos = a.row_pos[r];
    const RowSplits splits = row_splits(pos, a.window, a.min_split_len, a.max_splits);
    mine[k].q = a.q + size_t(r) * size_t(a.q_stride) + size_t(head) * size_t(a.head_dim);
    if (split < splits.count) {
      mine[k].begin = splits.begin(split);
      mine[k].end = splits.end(split, pos);
      mine[k].out_slot = (a.row_partial[r] * a.n_heads + head) * a.max_splits + split;
    }  // else an empty range and no output: the merge reads splits 0 .. count - 1 only
    n_mine = k + 1;
  }
  const int kv_head = head / (a.n_heads / a.n_kv_heads);
  const int* page_table = a.page_tables + size_t(a.row_seq[rows[0]]) * size_t(a.pages_per_seq);
  attend_split<T>(a, page_table, kv_head, walk_begin, walk_end, mine, n_mine, reinterpret_cast<T*>(smem));
}

}  // namespace

void launch_prefill_attention(const AttentionArgs& args, const int* tile_first, const int* tile_count,
                              const int* tile_rows, int n_tiles, cudaStream_t stream) {
  if (n_tiles == 0) return;
  const dim3 grid(unsigned(n_tiles), unsigned(args.n_heads), unsigned(args.max_splits));
  ASTRAI_DISPATCH_DTYPE(args.kv.dtype, {
    const size_t smem = size_t(attention_smem_bytes<Elem>(args.head_dim));
    allow_attention_smem(prefill_attention_kernel<Elem>, smem);
    ASTRAI_LAUNCH(prefill_attention_kernel<Elem>, grid, kAttentionThreads, smem, stream)(args, tile_first, tile_count,
                                                                               tile_rows);
  });
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
