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

#include "engine/executor/row_sampling.h"
#include "reference/batch.h"
#include "reference/kv_cache_view.h"
#include "reference/model_config.h"

namespace astrai {

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
  // rows[i].uniform, rows[i].mask) of reference/sampling gives, and its logprobs what
  // token_logprobs(the raw row, token, rows[i].logprobs) gives. This default samples on the host with the
  // reference sampler; an executor whose logits live on a device samples
  // there and copies back only the ids (the scheduler reaches it through
  // forward_and_sample_with_forks, below).
  virtual std::vector<SampledToken> forward_and_sample(std::span<const BatchToken> batch, KVCacheView& cache,
                                                       std::span<const RowSampling> rows);
  // forward_and_sample(), then one more token for each of `forks`, drawn from
  // wanted row forks[j].row as sample_rows(that row, forks[j].sampling) gives:
  // rows.size() + forks.size() tokens, the rows' first. The n choices of one
  // prompt sample their first tokens here, so no logits reach the scheduler.
  // Without forks this is forward_and_sample(); with them, the default runs
  // forward() and samples on the host with the reference sampler.
  virtual std::vector<SampledToken> forward_and_sample_with_forks(std::span<const BatchToken> batch,
                                                                  KVCacheView& cache,
                                                                  std::span<const RowSampling> rows,
                                                                  std::span<const ForkDraw> forks);
  // For logs and /stats: "cpu-reference", "cuda-bf16", ...
  virtual std::string name() const = 0;
  // Bytes the model's weights take where this executor keeps them (host
  // memory for the reference, device memory for CUDA); 0: not reported (test
  // stand-ins). `/stats` reports it.
  virtual size_t weights_bytes() const { return 0; }
};

// The reference sampler over rows of logits on the host: row r with rows[r].
// Throws std::invalid_argument when the counts differ.
std::vector<SampledToken> sample_rows(const xt::xtensor<float, 2>& logits, std::span<const RowSampling> rows);
// The same over rows.size() rows of `vocab` logits each, one after another.
std::vector<SampledToken> sample_rows(std::span<const float> logits, size_t vocab, std::span<const RowSampling> rows);

}  // namespace astrai
