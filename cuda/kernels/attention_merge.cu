// Merges the splits of attention by log-sum-exp. Reference: the softmax over
// positions first..pos (row_splits() in kernels.h: 0, or the sliding
// window's first) in attend_head() of reference/attention.cpp, which
// splits reproduce exactly in real arithmetic:
//   M = max_s lse_s,  w_s = exp(lse_s - M),  out = sum_s w_s o_s / sum_s w_s
// where o_s is split s's softmax-weighted V and lse_s the log of its
// softmax denominator. A head's sink logit (gpt-oss) is one more term of the
// denominator with no value: M includes it and sum_s w_s gains exp(sink - M),
// last (softmax() in reference/attention.cpp adds it last too). The merge is
// the one place every row's softmax is completed, so the split kernels
// need not know about sinks. Splits are summed in order 0, 1, ... for every row,
// whichever kernel produced them; a row's splits are row_splits() of its own
// position (kernels.h), so the merge sees the same splits in any batch.
#include <stdexcept>
#include <string>

#include "cuda/cuda_check.h"
#include "cuda/kernels/dtype_device.cuh"
#include "cuda/kernels/kernels.h"

namespace astrai::cuda {
namespace {

// The most splits a row may have here (paged_attention.h's kSplitsPerRow is 32).
constexpr int kMaxSplits = 64;

// One block per (listed row, head); threads over head_dim. Thread s loads
// split s's lse into shared memory and, once every thread has the maximum,
// its weight exp(lse_s - M): a split's lse is read from global memory once,
// not once per element, and the loop over the splits has only independent
// loads of o left. Every thread takes M and the weights' sum over the
// shared values in split order, the operations (and bits) of one thread
// doing it all.
template <typename T>
__global__ void attention_merge_kernel(const AttentionArgs a, const int* __restrict__ rows, T* __restrict__ out) {
  __shared__ float lse[kMaxSplits], weight[kMaxSplits];
  const int r = rows[blockIdx.x], h = blockIdx.y, hd = a.head_dim;
  const int pos = a.row_pos[r];
  const int n_splits = row_splits(pos, a.window, a.min_split_len, a.max_splits).count;
  const size_t base = (size_t(a.row_partial[r]) * size_t(a.n_heads) + size_t(h)) * size_t(a.max_splits);
  for (int s = int(threadIdx.x); s < n_splits; s += int(blockDim.x)) lse[s] = a.lse_partial[base + size_t(s)];
  __syncthreads();
  const bool sink = a.sinks != nullptr;
  const float sink_logit = sink ? to_float(static_cast<const T*>(a.sinks)[h]) : 0.0f;
  float m = lse[0];
  for (int s = 1; s < n_splits; ++s) m = fmaxf(m, lse[s]);
  if (sink) m = fmaxf(m, sink_logit);
  for (int s = int(threadIdx.x); s < n_splits; s += int(blockDim.x)) weight[s] = expf(__fsub_rn(lse[s], m));
  __syncthreads();
  float weight_sum = 0.0f;
  for (int s = 0; s < n_splits; ++s) weight_sum = __fadd_rn(weight_sum, weight[s]);
  if (sink) weight_sum = __fadd_rn(weight_sum, expf(__fsub_rn(sink_logit, m)));
  for (int d = threadIdx.x; d < hd; d += blockDim.x) {
    float x = 0.0f;
    for (int s = 0; s < n_splits; ++s)
      x = __fmaf_rn(weight[s], a.o_partial[(base + size_t(s)) * size_t(hd) + size_t(d)], x);
    out[size_t(r) * size_t(a.n_heads * hd) + size_t(h * hd + d)] = from_float<T>(__fdiv_rn(x, weight_sum));
  }
}

}  // namespace

void launch_attention_merge(const AttentionArgs& args, const int* rows, int n_rows, void* out, DType out_dtype,
                            cudaStream_t stream) {
  if (n_rows == 0) return;
  if (args.max_splits > kMaxSplits)
    throw std::invalid_argument("launch_attention_merge: " + std::to_string(args.max_splits) + " splits a row, above " +
                                std::to_string(kMaxSplits));
  const dim3 grid(unsigned(n_rows), unsigned(args.n_heads));
  const unsigned threads = args.head_dim >= 128 ? 128u : 64u;
  ASTRAI_DISPATCH_DTYPE(out_dtype, ASTRAI_LAUNCH(attention_merge_kernel<Elem>, grid, threads, 0, stream)(
                                       args, rows, static_cast<Elem*>(out)));
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
