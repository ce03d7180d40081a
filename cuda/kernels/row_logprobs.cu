// Log-probabilities on the device. Reference: token_logprobs() in
// reference/sampling/logprobs.cpp (the log-softmax of the raw row, and the
// most likely tokens).
//
// One block per row that asked (params[r].logprobs >= 0) and was sampled on
// the device (sampled[r].status == kSampleOk):
//   1. the row's maximum over the finite logits (a block reduction);
//   2. sum exp(l - max) in float64: each thread over its strided logits, then
//      thread 0 over the threads in order (deterministic, but not the
//      reference's id order: the sums agree within a few ulps, and the tests
//      compare within a stated tolerance);
//   3. the n most likely tokens, one block argmax per rank: rank k is the
//      most likely token after rank k - 1 in the order "larger logit, then
//      lower id", which is the reference's order exactly (no rounding), so
//      the tokens are the reference's. n <= 20 passes over the row: the
//      feature's cost, paid only by rows that ask for it.
#include <cmath>
#include <stdexcept>
#include <string>

#include "cuda/cuda_check.h"
#include "cuda/kernels/kernels.h"
#include "cuda/kernels/launch.cuh"  // last: in the emulated build it defines CUDA's built-ins

namespace astrai::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kNone = 0x7fffffff;

// (a, ia) comes before (b, ib): larger logit first, ties by lower id.
__device__ __forceinline__ bool before(float a, int ia, float b, int ib) { return a > b || (a == b && ia < ib); }

__global__ void __launch_bounds__(kThreads)
    row_logprobs_kernel(const float* __restrict__ logits, int vocab, const DeviceSamplingRow* __restrict__ params,
                        const DeviceSampledToken* __restrict__ sampled, DeviceTokenLogprobs* __restrict__ out) {
  __shared__ float red_v[kThreads];
  __shared__ int red_i[kThreads];
  __shared__ double red_s[kThreads];
  __shared__ double log_total;
  const int row = int(blockIdx.x), t = int(threadIdx.x);
  const DeviceSamplingRow p = params[row];
  const DeviceSampledToken chosen = sampled[row];
  if (p.logprobs < 0 || chosen.status != kSampleOk) return;  // the same for every thread of the block
  const float* const x = logits + size_t(row) * size_t(vocab);
  const float inf = __int_as_float(0x7f800000);
  DeviceTokenLogprobs* const o = out + row;

  // 1. the maximum (a sampled row has a finite logit and no NaN or +inf)
  float best = -inf;
  for (int j = t; j < vocab; j += kThreads) best = x[j] > best ? x[j] : best;
  red_v[t] = best;
  __syncthreads();
  if (t == 0) {
    float m = red_v[0];
    for (int i = 1; i < kThreads; ++i) m = red_v[i] > m ? red_v[i] : m;
    red_v[0] = m;
  }
  __syncthreads();
  const double top = double(red_v[0]);
  __syncthreads();

  // 2. the log of the softmax's total
  double sum = 0.0;
  for (int j = t; j < vocab; j += kThreads)
    if (x[j] > -inf) sum += exp(double(x[j]) - top);
  red_s[t] = sum;
  __syncthreads();
  if (t == 0) {
    double total = 0.0;
    for (int i = 0; i < kThreads; ++i) total += red_s[i];
    log_total = top + log(total);
    o->logprob = double(x[chosen.token]) - log_total;
    o->n = 0;
  }
  __syncthreads();

  // 3. the top tokens, one rank at a time
  const int n = p.logprobs < kDeviceMaxTopLogprobs ? p.logprobs : kDeviceMaxTopLogprobs;
  float previous = inf;
  int previous_id = -1;  // nothing comes before rank 0
  for (int rank = 0; rank < n; ++rank) {
    float v = -inf;
    int id = kNone;
    for (int j = t; j < vocab; j += kThreads) {
      const float l = x[j];
      if (!(l > -inf) || !before(previous, previous_id, l, j)) continue;  // masked, or already listed
      if (id == kNone || before(l, j, v, id)) {
        v = l;
        id = j;
      }
    }
    red_v[t] = v;
    red_i[t] = id;
    __syncthreads();
    if (t == 0) {
      for (int i = 1; i < kThreads; ++i)
        if (red_i[i] != kNone && (red_i[0] == kNone || before(red_v[i], red_i[i], red_v[0], red_i[0]))) {
          red_v[0] = red_v[i];
          red_i[0] = red_i[i];
        }
      if (red_i[0] != kNone) {
        o->top_token[rank] = red_i[0];
        o->top_logprob[rank] = double(red_v[0]) - log_total;
        o->n = rank + 1;
      }
    }
    __syncthreads();
    if (red_i[0] == kNone) break;  // fewer finite logits than n (the same for every thread)
    previous = red_v[0];
    previous_id = red_i[0];
    __syncthreads();  // red_v / red_i are written again by the next rank
  }
}

}  // namespace

void launch_row_logprobs(const float* logits, int rows, int vocab, const DeviceSamplingRow* params,
                         const DeviceSampledToken* sampled, DeviceTokenLogprobs* out, cudaStream_t stream) {
  if (rows == 0) return;
  if (vocab <= 0) throw std::invalid_argument("launch_row_logprobs: vocabulary of " + std::to_string(vocab));
  ASTRAI_LAUNCH(row_logprobs_kernel, rows, kThreads, 0, stream)(logits, vocab, params, sampled, out);
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
