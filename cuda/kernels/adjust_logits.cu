// Penalties and logit bias on the device. Reference: adjusted_logit() and
// apply_adjustments() in reference/sampling/penalties.cpp.
//
// One block per row copies the row (raw logits stay as they are: logprobs
// read them) and then applies the row's adjustments, one thread each; the
// adjustments name distinct tokens, so no two threads write one element.
// The arithmetic is the reference's, with the rounding intrinsics so that no
// multiply and add are fused: x = double(v); x = x / r (x > 0) or x * r; then
// float(x + offset), correctly rounded; a ban is -inf. The work is the row's
// copy plus O(adjustments), never a search of the vocabulary.
#include <stdexcept>
#include <string>

#include "cuda/cuda_check.h"
#include "cuda/kernels/kernels.h"
#include "cuda/kernels/launch.cuh"  // last: in the emulated build it defines CUDA's built-ins

namespace astrai::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    adjust_rows_kernel(const float* __restrict__ logits, float* __restrict__ adjusted, int vocab,
                       const DeviceSamplingRow* __restrict__ params,
                       const DeviceLogitAdjustment* __restrict__ adjustments) {
  const int row = int(blockIdx.x), t = int(threadIdx.x);
  const float* const x = logits + size_t(row) * size_t(vocab);
  float* const y = adjusted + size_t(row) * size_t(vocab);
  for (int j = t; j < vocab; j += kThreads) y[j] = x[j];
  __syncthreads();
  const DeviceSamplingRow p = params[row];
  const double r = double(p.repetition_penalty);
  for (int i = t; i < p.adjust_count; i += kThreads) {
    const DeviceLogitAdjustment a = adjustments[p.adjust_begin + i];
    if (a.flags & kAdjustBanned) {
      y[a.token] = __int_as_float(int(0xff800000u));  // -inf
      continue;
    }
    double v = double(x[a.token]);
    if (a.flags & kAdjustRepetition) v = v > 0.0 ? __ddiv_rn(v, r) : __dmul_rn(v, r);
    y[a.token] = __double2float_rn(__dadd_rn(v, a.offset));
  }
}

}  // namespace

void launch_adjust_rows(const float* logits, float* adjusted, int rows, int vocab, const DeviceSamplingRow* params,
                        const DeviceLogitAdjustment* adjustments, cudaStream_t stream) {
  if (rows == 0) return;
  if (vocab <= 0) throw std::invalid_argument("launch_adjust_rows: vocabulary of " + std::to_string(vocab));
  ASTRAI_LAUNCH(adjust_rows_kernel, rows, kThreads, 0, stream)(logits, adjusted, vocab, params, adjustments);
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
