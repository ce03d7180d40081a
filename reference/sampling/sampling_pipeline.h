// Composes the sampling strategies into the full rule that turns one row of
// logits into a token:
//
//   temperature -> top-k -> top-p -> softmax -> multinomial draw
//
// Temperature 0 is greedy: the limit of softmax(l / T) as T -> 0 puts all mass
// on the largest logit, so the pipeline is then just top-k with k = 1, whose
// tie rule (lower id) is llama2.c's argmax (the first maximum). The draw still
// consumes one uniform, so the n-th token of a request always uses the n-th
// output of its generator whatever the temperature.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "reference/sampling/candidates.h"
#include "reference/sampling/rng.h"
#include "reference/sampling/sampling_params.h"
#include "reference/sampling/sampling_strategy.h"

namespace astrai {

class SamplingPipeline {
 public:
  // The API's pipeline: validates params (std::invalid_argument), then
  // temperature(T) -> top_k(k) -> top_p(p), or top_k(1) when T = 0.
  // params.seed is not used here; the generator belongs to the request.
  explicit SamplingPipeline(const SamplingParams& params);
  // Any other composition, applied in the given order.
  explicit SamplingPipeline(std::vector<std::unique_ptr<BaseSamplingStrategy>> strategies);

  // The candidates left after every strategy, in ascending id order (the
  // order the draw walks). Throws std::invalid_argument for bad logits (see
  // candidates_from_logits).
  Candidates kept_candidates(std::span<const float> logits) const;
  // The final distribution over the whole vocabulary: softmax over the kept
  // candidates, 0 for every other token. Same size as logits.
  std::vector<double> probabilities(std::span<const float> logits) const;
  // Draws one token: softmax over the kept candidates in ascending id order,
  // then inverse_cdf with one rng.next_uniform().
  int sample(std::span<const float> logits, Rng& rng) const;

  // "temperature(0.700000) -> top_k(50) -> top_p(0.900000)"
  std::string describe() const;

 private:
  std::vector<std::unique_ptr<BaseSamplingStrategy>> strategies_;
};

}  // namespace astrai
