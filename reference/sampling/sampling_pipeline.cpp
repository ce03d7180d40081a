// The sampling pipeline: strategies in order, then softmax and one draw.
#include "reference/sampling/sampling_pipeline.h"

#include <stdexcept>

#include "reference/sampling/multinomial.h"

namespace astrai {
namespace {

std::vector<std::unique_ptr<BaseSamplingStrategy>> strategies_for(const SamplingParams& params) {
  params.validate();
  std::vector<std::unique_ptr<BaseSamplingStrategy>> strategies;
  if (params.temperature == 0.0f) {
    strategies.push_back(std::make_unique<TopKStrategy>(1));  // greedy: argmax, lowest id on ties
    return strategies;
  }
  strategies.push_back(std::make_unique<TemperatureStrategy>(params.temperature));
  strategies.push_back(std::make_unique<TopKStrategy>(params.top_k));
  strategies.push_back(std::make_unique<TopPStrategy>(params.top_p));
  return strategies;
}

// The candidates in ascending id order, by placing each at its id: O(vocab)
// rather than a sort, since a top-p cut over 32000 tokens can keep most.
Candidates in_id_order(const Candidates& candidates, std::size_t vocab_size) {
  std::vector<const Candidate*> by_id(vocab_size, nullptr);
  for (const Candidate& c : candidates) by_id[c.id] = &c;
  Candidates ordered;
  ordered.reserve(candidates.size());
  for (const Candidate* c : by_id)
    if (c != nullptr) ordered.push_back(*c);
  return ordered;
}

}  // namespace

SamplingPipeline::SamplingPipeline(const SamplingParams& params) : SamplingPipeline(strategies_for(params)) {}

SamplingPipeline::SamplingPipeline(std::vector<std::unique_ptr<BaseSamplingStrategy>> strategies)
    : strategies_(std::move(strategies)) {
  for (const auto& strategy : strategies_) {
    if (!strategy) throw std::invalid_argument("SamplingPipeline: a strategy is null");
  }
}

Candidates SamplingPipeline::kept_candidates(std::span<const float> logits) const {
  Candidates candidates = candidates_from_logits(logits);
  for (const auto& strategy : strategies_) strategy->apply(candidates);
  return in_id_order(candidates, logits.size());
}

std::vector<double> SamplingPipeline::probabilities(std::span<const float> logits) const {
  const Candidates kept = kept_candidates(logits);
  const std::vector<double> kept_probabilities = softmax(kept);
  std::vector<double> distribution(logits.size(), 0.0);
  for (std::size_t i = 0; i < kept.size(); ++i) distribution[kept[i].id] = kept_probabilities[i];
  return distribution;
}

int SamplingPipeline::sample(std::span<const float> logits, Rng& rng) const {
  const Candidates kept = kept_candidates(logits);
  const std::vector<double> kept_probabilities = softmax(kept);
  return kept[inverse_cdf(kept_probabilities, rng.next_uniform())].id;
}

std::string SamplingPipeline::describe() const {
  std::string text;
  for (const auto& strategy : strategies_) text += (text.empty() ? "" : " -> ") + strategy->describe();
  return text.empty() ? "(no strategy)" : text;
}

}  // namespace astrai
