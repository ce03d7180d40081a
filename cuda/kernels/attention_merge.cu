// Merges the splits of attention by log-sum-exp. Reference: the softmax over
// all positions 0..pos in attend_head() of reference/attention.cpp, which
// splits reproduce exactly in real arithmetic:
//   M = max_s lse_s,  w_s = exp(lse_s - M),  out = sum_s w_s o_s / sum_s w_s
// where o_s is split s's softmax-weighted V and lse_s the log of its
// softmax denominator. Splits are summed in order 0, 1, ... for every row,
// whichever kernel produced them; a row's splits are split_len_of() its own
// position (kernels.h), so the merge sees the same splits in any batch.
#include "cuda/cuda_check.h"
#include "cuda/kernels/dtype_device.cuh"
#include "cuda/kernels/kernels.h"

namespace astrai::cuda {
namespace {

// One block per (listed row, head); threads over head_dim.
template <typename T>
__global__ void attention_merge_kernel(const AttentionArgs a, const int* __restrict__ rows, T* __restrict__ out) {
  const int r = rows[blockIdx.x], h = blockIdx.y, hd = a.head_dim;
  const int pos = a.row_pos[r];
  const int n_splits = pos / split_len_of(pos, a.min_split_len, a.max_splits) + 1;
  const size_t base = (size_t(a.row_partial[r]) * size_t(a.n_heads) + size_t(h)) * size_t(a.max_splits);
  const float* lse = a.lse_partial + base;
  float m = lse[0];
  for (int s = 1; s < n_splits; ++s) m = fmaxf(m, lse[s]);
  float weight_sum = 0.0f;
  for (int s = 0; s < n_splits; ++s) weight_sum = __fadd_rn(weight_sum, expf(__fsub_rn(lse[s], m)));
  for (int d = threadIdx.x; d < hd; d += blockDim.x) {
    float x = 0.0f;
    for (int s = 0; s < n_splits; ++s)
      x = __fmaf_rn(expf(__fsub_rn(lse[s], m)), a.o_partial[(base + size_t(s)) * size_t(hd) + size_t(d)], x);
    out[size_t(r) * size_t(a.n_heads * hd) + size_t(h * hd + d)] = from_float<T>(__fdiv_rn(x, weight_sum));
  }
}

}  // namespace

void launch_attention_merge(const AttentionArgs& args, const int* rows, int n_rows, void* out, DType out_dtype,
                            cudaStream_t stream) {
  if (n_rows == 0) return;
  const dim3 grid(unsigned(n_rows), unsigned(args.n_heads));
  const unsigned threads = args.head_dim >= 128 ? 128u : 64u;
  ASTRAI_DISPATCH_DTYPE(out_dtype, ASTRAI_LAUNCH(attention_merge_kernel<Elem>, grid, threads, 0, stream)(
                                       args, rows, static_cast<Elem*>(out)));
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
