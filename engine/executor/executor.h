// What the scheduler asks of a backend: run the forward pass over a batch of
// tokens against a KV cache. The CPU reference and the CUDA implementation sit
// behind this one interface, so the scheduler and everything above it are
// written once.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "reference/batch.h"
#include "reference/kv_cache_view.h"
#include "reference/model_config.h"
#include "reference/sampling/logprobs.h"
#include "reference/sampling/penalties.h"
#include "reference/sampling/sampling_params.h"

namespace astrai {

// How one wanted row's next token is drawn: its request's parameters and the
// uniform its request's generator drew for this token (SamplerState::next_uniform).
struct RowSampling {
  SamplingParams params;
  double uniform = 0.0;
  // The request's penalties and bias for this token (SamplerState::adjustments(),
  // which the request's state keeps up to date, so this is a view, not a copy):
  // applied to the row before it is sampled. O(tokens seen), never O(vocabulary).
  std::span<const LogitAdjustment> adjustments = {};
  // -1: no log-probabilities; n >= 0: the token's and the n most likely ones
  // (token_logprobs of the raw row, before the adjustments).
  int logprobs = -1;
};

// One wanted row's next token, or why there is none (bad logits: NaN, +inf,
// nothing finite). Only that row's request fails; the batch goes on.
struct SampledToken {
  int token = -1;
  std::string error;  // empty when token is valid
  std::optional<TokenLogprobs> logprobs;  // when the row asked for them
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual const ModelConfig& config() const = 0;
  // Same contract as astrai::forward (reference/forward.h): writes each row's
  // K/V to `cache` and returns the logits of the rows with want_logits.
  virtual xt::xtensor<float, 2> forward(std::span<const BatchToken> batch, KVCacheView& cache) = 0;
  // forward(), then each wanted row's next token, in batch order (rows[i] is
  // the i-th row with want_logits). Each token is what
  // sample_with_uniform(row with rows[i].adjustments applied, rows[i].params,
  // rows[i].uniform) of reference/sampling gives, and its logprobs what
  // token_logprobs(the raw row, token, rows[i].logprobs) gives. This default samples on the host with the
  // reference sampler; an executor whose logits live on a device samples
  // there and copies back only the ids (the scheduler calls only this).
  virtual std::vector<SampledToken> forward_and_sample(std::span<const BatchToken> batch, KVCacheView& cache,
                                                       std::span<const RowSampling> rows);
  // For logs and /stats: "cpu-reference", "cuda-bf16", ...
  virtual std::string name() const = 0;
};

// The reference sampler over rows of logits on the host: row r with rows[r].
// Throws std::invalid_argument when the counts differ.
std::vector<SampledToken> sample_rows(const xt::xtensor<float, 2>& logits, std::span<const RowSampling> rows);
// The same over rows.size() rows of `vocab` logits each, one after another.
std::vector<SampledToken> sample_rows(std::span<const float> logits, size_t vocab, std::span<const RowSampling> rows);

}  // namespace astrai
