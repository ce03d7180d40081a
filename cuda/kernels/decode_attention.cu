// Decode attention over pages. Reference: causal_attention() in
// reference/attention.cpp, for batch rows that are the only row of their
// sequence in the batch (decode steps), each sequence of its own length.
//
// Grid (decode row, KV head, split): a block loads each K/V tile once for the
// n_heads / n_kv_heads query heads that share the KV head (grouped-query
// attention), so the cache is read once per KV head; warp w takes query
// heads w, w + 4, ... of the group (attention_split.cuh). A row's context is
// cut into splits of split_len_of(pos) positions, at most max_splits of them,
// so that a single sequence still fills the GPU (16 splits x 8 KV heads = 128
// blocks for Llama 3 8B up to 8k positions, 256 at 131k); on a sliding layer
// the splits cover the window only (row_splits() in kernels.h); attention_merge.cu
// combines the splits by log-sum-exp. Blocks past a row's last split exit at once, so the grid
// depends only on the batch shape: a decode step can be replayed as a CUDA
// graph.
#include "cuda/cuda_check.h"
#include "cuda/kernels/attention_split.cuh"

namespace astrai::cuda {
namespace {

template <typename T>
__global__ void __launch_bounds__(kAttentionThreads, kAttentionBlocksPerSM)
    decode_attention_kernel(const AttentionArgs a, const int* __restrict__ decode_rows) {
  ASTRAI_DYNAMIC_SHARED(uint4, smem);  // uint4: 16-byte aligned, one declaration for every T
  const int r = decode_rows[blockIdx.x], kv_head = int(blockIdx.y), split = int(blockIdx.z);
  const int pos = a.row_pos[r];
  const RowSplits splits = row_splits(pos, a.window, a.min_split_len, a.max_splits);
  if (split >= splits.count) return;  // the whole block exits: no __syncthreads() is left waiting
  const int begin = splits.begin(split), end = splits.end(split, pos);  // the query's range; the walk starts on a tile
  const int group = a.n_heads / a.n_kv_heads, warp = int(threadIdx.x) / 32;
  SplitQuery mine[kQueriesPerWarp];
  int n_mine = 0;
#pragma unroll
  for (int k = 0; k < kQueriesPerWarp; ++k) {
    const int qi = warp + k * kAttentionWarps, h = kv_head * group + qi;
    if (qi >= group) break;
    mine[k].q = a.q + size_t(r) * size_t(a.q_stride) + size_t(h) * size_t(a.head_dim);
    mine[k].begin = begin;
    mine[k].end = end;
    mine[k].out_slot = (a.row_partial[r] * a.n_heads + h) * a.max_splits + split;
    n_mine = k + 1;
  }
  const int* page_table = a.page_tables + size_t(a.row_seq[r]) * size_t(a.pages_per_seq);
  attend_split<T>(a, page_table, kv_head, splits.walk_begin(split), end, mine, n_mine, reinterpret_cast<T*>(smem));
}

}  // namespace

void launch_decode_attention(const AttentionArgs& args, const int* decode_rows, int n_decode_rows,
                             cudaStream_t stream) {
  if (n_decode_rows == 0) return;
  const dim3 grid(unsigned(n_decode_rows), unsigned(args.n_kv_heads), unsigned(args.max_splits));
  ASTRAI_DISPATCH_DTYPE(args.kv.dtype, {
    const size_t smem = size_t(attention_smem_bytes<Elem>(args.head_dim));
    allow_attention_smem(decode_attention_kernel<Elem>, smem);
    ASTRAI_LAUNCH(decode_attention_kernel<Elem>, grid, kAttentionThreads, smem, stream)(args, decode_rows);
  });
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
