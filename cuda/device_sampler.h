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
#include "cuda/pinned_buffer.h"
#include "engine/executor/executor.h"

namespace astrai::cuda {

// The kernel's view of one row: its parameters, or top_k = -1 (left to the
// host) when the parameters are invalid or the uniform is outside [0, 1).
DeviceSamplingRow device_sampling_row(const RowSampling& row);

class DeviceSampler {
 public:
  // Row r of `logits` (device, float32, [rows.size(), vocab], written by work
  // queued on `stream`) sampled by rows[r]. Synchronises `stream`.
  // stage(), enqueue(), a synchronisation and finish(), in one call.
  std::vector<SampledToken> sample(const float* logits, int vocab, std::span<const RowSampling> rows,
                                   cudaStream_t stream);

  // The three halves, for a caller that captures the device work in a CUDA
  // graph with the forward pass (cuda_executor.cpp):
  //  - stage(): the host half. Each row's parameters into a pinned staging
  //    buffer, rows past rows.size() up to `padded_rows` greedy (a padded
  //    batch's rows, whose results nobody reads); grows the buffers, so it
  //    may synchronise `stream` and must not run during a capture. Returns
  //    whether enqueue() may be captured (always, now: the penalties' and
  //    biases' adjustment list goes up whole from its pinned staging, at a
  //    size that changes only when the buffers grow).
  //  - enqueue(): the device half, no allocation and no synchronisation:
  //    the staged parameters up, the adjustments, the sampling kernel, the
  //    logprobs, and the results down into pinned memory, all on `stream`.
  //    The same launches for every step staged with the same padded_rows,
  //    staged_logprobs() and staged_adjustments() (and generation()), so a
  //    graph of it replays correctly after each stage().
  //  - finish(): after `stream` is synchronised, the tokens, and the rows the
  //    kernel left to the host sampled there (their logits copied back).
  bool stage(int vocab, std::span<const RowSampling> rows, int padded_rows, cudaStream_t stream);
  void enqueue(const float* logits, int vocab, cudaStream_t stream) const;
  std::vector<SampledToken> finish(const float* logits, int vocab, std::span<const RowSampling> rows);
  // Whether the staged step computes logprobs (an extra kernel and copy),
  // and whether it adjusts logits (a copy of the list and a kernel).
  bool staged_logprobs() const { return any_logprobs_; }
  bool staged_adjustments() const { return any_adjustments_; }
  // Whether the staged step has token masks (one upload of every staged
  // row's mask words, pinned staging to device, per step).
  bool staged_masks() const { return any_masks_; }
  int staged_rows() const { return staged_rows_; }
  // Rows the buffers hold.
  int capacity() const { return capacity_; }
  // Counts the times stage() replaced a buffer: graphs that captured
  // enqueue() before then point at freed memory and must be dropped.
  long generation() const { return generation_; }

  // What the kernel reported for each row of the last sample() call.
  std::span<const DeviceSampledToken> last_device_results() const {
    return {results_host_.as<DeviceSampledToken>(), size_t(real_rows_)};
  }
  // How many rows of the last call were sampled on the host (their logits copied back).
  int last_host_rows() const { return host_rows_; }

 private:
  void stage_masks(std::span<const RowSampling> rows, int words, int padded_rows, cudaStream_t stream);

  int capacity_ = 0;                // rows the buffers below hold
  int staged_rows_ = 0, real_rows_ = 0;
  bool any_logprobs_ = false, any_adjustments_ = false, any_masks_ = false;
  long generation_ = 0;
  DeviceBuffer params_, results_;
  PinnedBuffer params_host_, results_host_;  // fixed addresses: graphs copy from and to them
  // Penalties and bias: the rows' adjustment list, and the adjusted logits.
  DeviceBuffer adjustments_, adjusted_;
  size_t adjustments_bytes_ = 0, adjusted_bytes_ = 0;
  std::vector<DeviceLogitAdjustment> adjustments_host_;
  PinnedBuffer adjustments_staging_;  // adjustments_bytes_, copied up whole
  // Token masks: row r's at masks_[r * mask_words_], for every staged row
  // (rows without one are not read); copied up whole, staged_rows_ *
  // mask_words_ words, a size fixed for a given padded batch and vocabulary.
  DeviceBuffer masks_;
  PinnedBuffer masks_staging_;
  size_t masks_bytes_ = 0;
  int mask_words_ = 0;
  // Logprobs of the rows that ask for them.
  DeviceBuffer logprobs_;
  PinnedBuffer logprobs_host_;
  int host_rows_ = 0;
};

}  // namespace astrai::cuda
