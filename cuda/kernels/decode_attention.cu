// Decode attention over pages. Reference: causal_attention() in
// reference/attention.cpp, for batch rows that are the only row of their
// sequence in the batch (decode steps), each sequence of its own length.
//
// Grid (decode row, KV head, split): a block loads each K/V tile once for the
// n_heads / n_kv_heads query heads that share the KV head (grouped-query
// attention), so the cache is read once per KV head. Long contexts are split
// along the sequence into split_len positions per block (more blocks in
// flight for a small batch); attention_merge.cu combines the splits by
// log-sum-exp. Blocks past a row's length exit at once, so the grid depends
// only on the batch shape: a decode step can be replayed as a CUDA graph.
#include "cuda/cuda_check.h"
#include "cuda/kernels/attention_split.cuh"

namespace astrai::cuda {
namespace {

template <typename T>
__global__ void __launch_bounds__(kAttentionThreads)
    decode_attention_kernel(const AttentionArgs a, const int* __restrict__ decode_rows) {
  ASTRAI_DYNAMIC_SHARED(float, smem);
  const int r = decode_rows[blockIdx.x], kv_head = blockIdx.y, split = blockIdx.z;
  const int pos = a.row_pos[r];
  const int begin = split * a.split_len;
  if (begin > pos) return;  // the whole block exits: no __syncthreads() is left waiting
  const int end = min(begin + a.split_len, pos + 1);
  const int group = a.n_heads / a.n_kv_heads, hd = a.head_dim;
  const SplitSmem sm(smem, hd);
  SplitQueries& qs = *sm.queries;
  if (threadIdx.x == 0) qs.n = group;
  if (threadIdx.x < group) {
    const int h = kv_head * group + int(threadIdx.x);
    qs.pos[threadIdx.x] = pos;
    qs.out_slot[threadIdx.x] = (a.row_partial[r] * a.n_heads + h) * a.max_splits + split;
  }
  for (int e = threadIdx.x; e < group * hd; e += kAttentionThreads)
    sm.q[e] = a.q[size_t(r) * size_t(a.q_stride) + size_t(kv_head * group * hd + e)];
  __syncthreads();
  const int* page_table = a.page_tables + size_t(a.row_seq[r]) * size_t(a.pages_per_seq);
  attend_split<T>(a, page_table, kv_head, begin, end, qs, sm);
}

}  // namespace

void launch_decode_attention(const AttentionArgs& args, const int* decode_rows, int n_decode_rows,
                             cudaStream_t stream) {
  if (n_decode_rows == 0) return;
  const dim3 grid(unsigned(n_decode_rows), unsigned(args.n_kv_heads), unsigned(args.max_splits));
  const size_t smem = size_t(attention_smem_floats(args.head_dim)) * sizeof(float);
  ASTRAI_DISPATCH_DTYPE(args.kv.dtype, {
    allow_attention_smem(decode_attention_kernel<Elem>, smem);
    ASTRAI_LAUNCH(decode_attention_kernel<Elem>, grid, kAttentionThreads, smem, stream)(args, decode_rows);
  });
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
