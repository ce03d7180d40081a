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
#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda/cuda_check.h"
#include "cuda/kernels/dtype_device.cuh"
#include "cuda/kernels/kernels.h"
#include "cuda/kernels/vector_pointer.cuh"

namespace astrai::cuda {
namespace {

// The most splits a row may have here (paged_attention.h's kSplitsPerRow is 32).
constexpr int kMaxSplits = 64;

constexpr int kMergeThreads = 128;

// The split weights of block (row, head), shared by both kernels below.
// Thread s loads split s's lse into shared memory and, once every thread has
// the maximum, its weight exp(lse_s - M): a split's lse is read from global
// memory once, not once per element. Every thread takes M and the weights'
// sum over the shared values in split order, the operations (and bits) of
// one thread doing it all. Returns the weights' sum (with the sink's term).
template <typename T>
__device__ float split_weights(const AttentionArgs& a, size_t base, int n_splits, int h, float (&lse)[kMaxSplits],
                               float (&weight)[kMaxSplits]) {
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
  return weight_sum;
}

// One block per (listed row, head); thread d adds element d of the splits
// in split order: x = sum_s w_s o_s[d] (a chain of fmaf), then x / sum_s w_s.
// For head_dim that is not whole float4s.
template <typename T>
__global__ void attention_merge_kernel(const AttentionArgs a, const int* __restrict__ rows, T* __restrict__ out) {
  __shared__ float lse[kMaxSplits], weight[kMaxSplits];
  const int r = rows[blockIdx.x], h = blockIdx.y, hd = a.head_dim;
  const int n_splits = row_splits(a.row_pos[r], a.window, a.min_split_len, a.max_splits).count;
  const size_t base = (size_t(a.row_partial[r]) * size_t(a.n_heads) + size_t(h)) * size_t(a.max_splits);
  const float weight_sum = split_weights<T>(a, base, n_splits, h, lse, weight);
  for (int d = threadIdx.x; d < hd; d += blockDim.x) {
    float x = 0.0f;
    for (int s = 0; s < n_splits; ++s)
      x = __fmaf_rn(weight[s], a.o_partial[(base + size_t(s)) * size_t(hd) + size_t(d)], x);
    out[size_t(r) * size_t(a.n_heads * hd) + size_t(h * hd + d)] = from_float<T>(__fdiv_rn(x, weight_sum));
  }
}

// The same merge with 16-byte loads, for head_dim a multiple of 4 (every
// model's): a row's split outputs are few bytes (16 splits x 128 floats at
// Qwen3-30B-A3B's decode step), so the kernel is as fast as the loads it
// keeps in flight, and one float4 a lane moves 4x the bytes of one float.
// Thread t takes columns c = t % cols (elements 4c .. 4c + 3, cols =
// head_dim / 4) of the splits s = g, g + G, g + 2G, ... of its group
// g = t / cols (G = kMergeThreads / cols groups), a chain of fmaf per
// element; after the barrier thread c adds the G groups' sums in group
// order and divides. A fixed order for every row, whatever its batch.
template <typename T>
__global__ void __launch_bounds__(kMergeThreads)
    attention_merge_vec_kernel(const AttentionArgs a, const int* __restrict__ rows, T* __restrict__ out) {
  __shared__ float lse[kMaxSplits], weight[kMaxSplits];
  __shared__ float4 group_sum[kMergeThreads];
  const int r = rows[blockIdx.x], h = blockIdx.y, hd = a.head_dim;
  const int n_splits = row_splits(a.row_pos[r], a.window, a.min_split_len, a.max_splits).count;
  const size_t base = (size_t(a.row_partial[r]) * size_t(a.n_heads) + size_t(h)) * size_t(a.max_splits);
  const float weight_sum = split_weights<T>(a, base, n_splits, h, lse, weight);
  const int cols = hd / 4, groups = kMergeThreads / cols, t = int(threadIdx.x);
  const int g = t / cols, c = t % cols;
  if (g < groups) {
    float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int s = g; s < n_splits; s += groups) {
      const float4 o = *ASTRAI_VECTOR_PTR(const float4, a.o_partial + (base + size_t(s)) * size_t(hd) + size_t(4 * c));
      const float w = weight[s];
      x.x = __fmaf_rn(w, o.x, x.x), x.y = __fmaf_rn(w, o.y, x.y);
      x.z = __fmaf_rn(w, o.z, x.z), x.w = __fmaf_rn(w, o.w, x.w);
    }
    group_sum[t] = x;
  }
  __syncthreads();
  if (t < cols) {
    float4 x = group_sum[t];
    for (int q = 1; q < groups; ++q) {
      const float4 y = group_sum[q * cols + t];
      x.x = __fadd_rn(x.x, y.x), x.y = __fadd_rn(x.y, y.y), x.z = __fadd_rn(x.z, y.z), x.w = __fadd_rn(x.w, y.w);
    }
    T* o = out + size_t(r) * size_t(a.n_heads * hd) + size_t(h * hd + 4 * t);
    o[0] = from_float<T>(__fdiv_rn(x.x, weight_sum));
    o[1] = from_float<T>(__fdiv_rn(x.y, weight_sum));
    o[2] = from_float<T>(__fdiv_rn(x.z, weight_sum));
    o[3] = from_float<T>(__fdiv_rn(x.w, weight_sum));
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
  // float4 loads need whole float4s of a head and a 16-byte aligned o_partial
  // (its rows are head_dim floats apart).
  const bool vector = args.head_dim % 4 == 0 && args.head_dim / 4 <= kMergeThreads &&
                      reinterpret_cast<uintptr_t>(args.o_partial) % 16 == 0;
  if (vector) {
    ASTRAI_DISPATCH_DTYPE(out_dtype, ASTRAI_LAUNCH(attention_merge_vec_kernel<Elem>, grid, kMergeThreads, 0, stream)(
                                         args, rows, static_cast<Elem*>(out)));
  } else {
    const unsigned threads = args.head_dim >= 128 ? 128u : 64u;
    ASTRAI_DISPATCH_DTYPE(out_dtype, ASTRAI_LAUNCH(attention_merge_kernel<Elem>, grid, threads, 0, stream)(
                                         args, rows, static_cast<Elem*>(out)));
  }
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
