// The sampler's steps (see sampler.h for the rules).
#include "reference/sampling/sampler.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

namespace astrai {
namespace {

[[maybe_unused]] bool valid(const SamplingParams& params) {  // for assert()
  try {
    params.validate();
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

// Throws for a logit no candidate may have (see candidates_from_logits);
// true when the token is a candidate (its logit is finite).
bool candidate_logit(std::size_t i, float logit) {
  if (std::isnan(logit)) throw std::invalid_argument("sampling: logit of token " + std::to_string(i) + " is NaN");
  if (logit == std::numeric_limits<float>::infinity())
    throw std::invalid_argument("sampling: logit of token " + std::to_string(i) +
                                " is +inf (only -inf, a masked token, is allowed)");
  return logit != -std::numeric_limits<float>::infinity();
}

[[noreturn]] void nothing_to_sample(std::size_t n) {
  throw std::invalid_argument("sampling: every one of the " + std::to_string(n) +
                              " logits is -inf, nothing can be sampled");
}

// Greedy without building the candidate set: the first maximum, which is
// what keep_top_k(1) keeps (more_likely: larger logit, then lower id). One
// pass finds the maximum and whether any logit is NaN or +inf (both fail
// x < +inf), eight lanes at a time so that the comparisons do not wait on
// each other; a second pass finds the maximum's first index. A bad row goes
// through candidates_from_logits for its error.
Candidate greedy_candidate(std::span<const float> logits) {
  if (logits.empty()) throw std::invalid_argument("sampling: the logits row is empty");
  constexpr float inf = std::numeric_limits<float>::infinity();
  constexpr std::size_t kLanes = 8;
  float lane_max[kLanes];
  bool lane_bad[kLanes];
  for (std::size_t b = 0; b < kLanes; ++b) {
    lane_max[b] = -inf;
    lane_bad[b] = false;
  }
  const std::size_t n = logits.size(), whole = n / kLanes * kLanes;
  for (std::size_t i = 0; i < whole; i += kLanes)
    for (std::size_t b = 0; b < kLanes; ++b) {
      const float x = logits[i + b];
      lane_bad[b] |= !(x < inf);
      lane_max[b] = x > lane_max[b] ? x : lane_max[b];
    }
  float max = -inf;
  bool bad = false;
  for (std::size_t b = 0; b < kLanes; ++b) {
    bad |= lane_bad[b];
    max = lane_max[b] > max ? lane_max[b] : max;
  }
  for (std::size_t i = whole; i < n; ++i) {
    bad |= !(logits[i] < inf);
    max = logits[i] > max ? logits[i] : max;
  }
  if (bad || max == -inf) candidates_from_logits(logits);  // throws, naming the first bad logit
  std::size_t best = 0;
  while (logits[best] != max) ++best;
  return {static_cast<int>(best), static_cast<double>(max)};
}

// The candidates in ascending id order: a sort when few remain (top-k), else
// by placing each at its id, O(vocab), since a top-p cut can keep most.
Candidates in_id_order(Candidates candidates, std::size_t vocab_size) {
  if (candidates.size() * 16 < vocab_size) {
    std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) { return a.id < b.id; });
    return candidates;
  }
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
  for (std::size_t i = 0; i < logits.size(); ++i)
    if (candidate_logit(i, logits[i])) candidates.push_back({static_cast<int>(i), static_cast<double>(logits[i])});
  if (candidates.empty()) nothing_to_sample(logits.size());
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
  // Greedy is keep_top_k(1) of the whole candidate set (argmax, lowest id on
  // ties), found in one pass without building the set.
  if (params.temperature == 0.0f) return {greedy_candidate(logits)};
  Candidates candidates = candidates_from_logits(logits);
  apply_temperature(candidates, params.temperature);
  keep_top_k(candidates, params.top_k);
  keep_top_p(candidates, params.top_p);
  return in_id_order(std::move(candidates), logits.size());
}

std::vector<double> probabilities(std::span<const float> logits, const SamplingParams& params) {
  const Candidates kept = kept_candidates(logits, params);
  const std::vector<double> kept_probabilities = softmax(kept);
  std::vector<double> distribution(logits.size(), 0.0);
  for (std::size_t i = 0; i < kept.size(); ++i) distribution[std::size_t(kept[i].id)] = kept_probabilities[i];
  return distribution;
}

int sample_with_uniform(std::span<const float> logits, const SamplingParams& params, double u) {
  const Candidates kept = kept_candidates(logits, params);
  const std::vector<double> kept_probabilities = softmax(kept);
  return kept[inverse_cdf(kept_probabilities, u)].id;
}

int sample(std::span<const float> logits, const SamplingParams& params, Rng& rng) {
  return sample_with_uniform(logits, params, rng.next_uniform());
}

int sample(std::span<const float> logits, const SamplingParams& params) { return SamplerState(params).next(logits); }

std::string describe_sampling(const SamplingParams& params) {
  if (params.temperature == 0.0f) return "top_k(1)";
  return "temperature(" + std::to_string(params.temperature) + ") -> top_k(" + std::to_string(params.top_k) +
         ") -> top_p(" + std::to_string(params.top_p) + ")";
}

SamplerState::SamplerState(const SamplingParams& params)
    : params_((params.validate(), params)), seed_(params.seed ? *params.seed : random_seed()), rng_(seed_) {}

}  // namespace astrai
