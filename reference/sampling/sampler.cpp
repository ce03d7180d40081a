// The sampler's steps (see sampler.h for the rules).
#include "reference/sampling/sampler.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace astrai {
namespace {

bool valid(const SamplingParams& params) {
  try {
    params.validate();
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

// The candidates in ascending id order, by placing each at its id: O(vocab)
// rather than a sort, since a top-p cut over 32000 tokens can keep most.
Candidates in_id_order(const Candidates& candidates, std::size_t vocab_size) {
  std::vector<const Candidate*> by_id(vocab_size, nullptr);
  for (const Candidate& c : candidates) by_id[std::size_t(c.id)] = &c;
  Candidates ordered;
  ordered.reserve(candidates.size());
  for (const Candidate* c : by_id)
    if (c != nullptr) ordered.push_back(*c);
  return ordered;
}

}  // namespace

Candidates candidates_from_logits(std::span<const float> logits) {
  if (logits.empty()) throw std::invalid_argument("sampling: the logits row is empty");
  Candidates candidates;
  candidates.reserve(logits.size());
  for (std::size_t i = 0; i < logits.size(); ++i) {
    const float logit = logits[i];
    if (std::isnan(logit)) throw std::invalid_argument("sampling: logit of token " + std::to_string(i) + " is NaN");
    if (logit == std::numeric_limits<float>::infinity())
      throw std::invalid_argument("sampling: logit of token " + std::to_string(i) +
                                  " is +inf (only -inf, a masked token, is allowed)");
    if (logit == -std::numeric_limits<float>::infinity()) continue;
    candidates.push_back({static_cast<int>(i), static_cast<double>(logit)});
  }
  if (candidates.empty())
    throw std::invalid_argument("sampling: every one of the " + std::to_string(logits.size()) +
                                " logits is -inf, nothing can be sampled");
  return candidates;
}

bool more_likely(const Candidate& a, const Candidate& b) {
  if (a.logit != b.logit) return a.logit > b.logit;
  return a.id < b.id;
}

std::vector<double> softmax(std::span<const Candidate> candidates) {
  if (candidates.empty()) throw std::invalid_argument("sampling: softmax of an empty candidate set");
  double max_logit = candidates.front().logit;
  for (const Candidate& c : candidates) max_logit = std::max(max_logit, c.logit);
  std::vector<double> probabilities(candidates.size());
  double total = 0.0;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    probabilities[i] = std::exp(candidates[i].logit - max_logit);
    total += probabilities[i];
  }
  // total >= 1: the maximum contributes exp(0) = 1.
  for (double& p : probabilities) p /= total;
  return probabilities;
}

void apply_temperature(Candidates& candidates, float temperature) {
  assert(std::isfinite(temperature) && temperature > 0.0f);
  // In float64 a float logit over a float temperature cannot overflow.
  const double t = temperature;
  for (Candidate& c : candidates) c.logit /= t;
}

void keep_top_k(Candidates& candidates, int k) {
  assert(k >= 0);
  if (k == 0 || candidates.size() <= std::size_t(k)) return;
  // more_likely breaks logit ties by lower id: the first k in that order.
  std::partial_sort(candidates.begin(), candidates.begin() + k, candidates.end(), more_likely);
  candidates.resize(std::size_t(k));
}

void keep_top_p(Candidates& candidates, float p) {
  assert(p > 0.0f && p <= 1.0f);
  if (p >= 1.0f) return;
  // exp is monotone, so logit order is probability order, and more_likely's
  // tie rule (lower id first) is the tie rule for equal probabilities.
  std::sort(candidates.begin(), candidates.end(), more_likely);
  const std::vector<double> probabilities = softmax(candidates);
  const double threshold = static_cast<double>(p);
  double mass = 0.0;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    mass += probabilities[i];
    if (mass >= threshold) {
      candidates.resize(i + 1);
      return;
    }
  }
  // Rounding left the total a hair under p: the whole set is the prefix.
}

std::size_t inverse_cdf(std::span<const double> probabilities, double u) {
  if (probabilities.empty()) throw std::invalid_argument("inverse_cdf: no probabilities to draw from");
  if (!(u >= 0.0 && u < 1.0)) throw std::invalid_argument("inverse_cdf: u must be in [0, 1), got " + std::to_string(u));
  double total = 0.0;
  std::size_t last_positive = probabilities.size();
  for (std::size_t i = 0; i < probabilities.size(); ++i) {
    total += probabilities[i];
    if (probabilities[i] > 0.0) last_positive = i;
  }
  if (last_positive == probabilities.size()) throw std::invalid_argument("inverse_cdf: every probability is zero");
  const double target = u * total;
  double cumulative = 0.0;
  for (std::size_t i = 0; i < probabilities.size(); ++i) {
    cumulative += probabilities[i];
    if (cumulative > target) return i;
  }
  return last_positive;
}

Candidates kept_candidates(std::span<const float> logits, const SamplingParams& params) {
  assert(valid(params));
  Candidates candidates = candidates_from_logits(logits);
  if (params.temperature == 0.0f) {
    keep_top_k(candidates, 1);  // greedy: argmax, lowest id on ties
  } else {
    apply_temperature(candidates, params.temperature);
    keep_top_k(candidates, params.top_k);
    keep_top_p(candidates, params.top_p);
  }
  return in_id_order(candidates, logits.size());
}

std::vector<double> probabilities(std::span<const float> logits, const SamplingParams& params) {
  const Candidates kept = kept_candidates(logits, params);
  const std::vector<double> kept_probabilities = softmax(kept);
  std::vector<double> distribution(logits.size(), 0.0);
  for (std::size_t i = 0; i < kept.size(); ++i) distribution[std::size_t(kept[i].id)] = kept_probabilities[i];
  return distribution;
}

int sample(std::span<const float> logits, const SamplingParams& params, Rng& rng) {
  const Candidates kept = kept_candidates(logits, params);
  const std::vector<double> kept_probabilities = softmax(kept);
  return kept[inverse_cdf(kept_probabilities, rng.next_uniform())].id;
}

int sample(std::span<const float> logits, const SamplingParams& params) { return SamplerState(params).next(logits); }

std::string describe_sampling(const SamplingParams& params) {
  if (params.temperature == 0.0f) return "top_k(1)";
  return "temperature(" + std::to_string(params.temperature) + ") -> top_k(" + std::to_string(params.top_k) +
         ") -> top_p(" + std::to_string(params.top_p) + ")";
}

SamplerState::SamplerState(const SamplingParams& params)
    : params_((params.validate(), params)), seed_(params.seed ? *params.seed : random_seed()), rng_(seed_) {}

int SamplerState::next(std::span<const float> logits) { return sample(logits, params_, rng_); }

}  // namespace astrai
