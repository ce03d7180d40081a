// Sampling where the logits are: the device sampler of sample.cu for every
// wanted row it can take, the host's reference sampler for the rest, so that
// each row gets exactly what sample_rows() (engine/executor/executor.h)
// would give it on the host:
//  - penalties and bias: the rows' adjustment lists (O(tokens seen) each) go
//    up and adjust_logits.cu applies them to a copy of the logits, which the
//    sampling kernel then reads; logprobs (row_logprobs.cu) read the raw ones;
//  - a row the kernel samples copies back one DeviceSampledToken (12 bytes)
//    instead of its vocabulary of logits;
//  - a row with bad logits (NaN, +inf, all -inf), a rule the kernel leaves to
//    the host (top-k keeping more than kSampleMaxKept candidates), or
//    parameters the host refuses (invalid, or a uniform outside [0, 1)) has
//    its logits row copied back and goes through sample_rows, whose error
//    text or token is then the answer.
#pragma once

#include <cuda_runtime_api.h>

#include <span>
#include <vector>

#include "cuda/device_buffer.h"
#include "cuda/kernels/kernels.h"
#include "engine/executor/executor.h"

namespace astrai::cuda {

// The kernel's view of one row: its parameters, or top_k = -1 (left to the
// host) when the parameters are invalid or the uniform is outside [0, 1).
DeviceSamplingRow device_sampling_row(const RowSampling& row);

class DeviceSampler {
 public:
  // Row r of `logits` (device, float32, [rows.size(), vocab], written by work
  // queued on `stream`) sampled by rows[r]. Synchronises `stream`.
  std::vector<SampledToken> sample(const float* logits, int vocab, std::span<const RowSampling> rows,
                                   cudaStream_t stream);

  // What the kernel reported for each row of the last sample() call.
  const std::vector<DeviceSampledToken>& last_device_results() const { return results_host_; }
  // How many rows of the last call were sampled on the host (their logits copied back).
  int last_host_rows() const { return host_rows_; }

 private:
  int capacity_ = 0;
  DeviceBuffer params_, results_;
  std::vector<DeviceSamplingRow> params_host_;
  std::vector<DeviceSampledToken> results_host_;
  // Penalties and bias: the rows' adjustment list, and the adjusted logits.
  DeviceBuffer adjustments_, adjusted_;
  size_t adjustments_bytes_ = 0, adjusted_bytes_ = 0;
  std::vector<DeviceLogitAdjustment> adjustments_host_;
  // Logprobs of the rows that ask for them.
  DeviceBuffer logprobs_;
  size_t logprobs_bytes_ = 0;
  std::vector<DeviceTokenLogprobs> logprobs_host_;
  int host_rows_ = 0;
};

}  // namespace astrai::cuda
