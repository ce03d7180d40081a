// Building the candidate set from a logits row, its likelihood order, and the
// numerically stable softmax that the strategies and the final draw share.
#include "reference/sampling/candidates.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace astrai {

Candidates candidates_from_logits(std::span<const float> logits) {
  if (logits.empty()) throw std::invalid_argument("sampling: the logits row is empty");
  Candidates candidates;
  candidates.reserve(logits.size());
  for (std::size_t i = 0; i < logits.size(); ++i) {
    const float logit = logits[i];
    if (std::isnan(logit)) {
      throw std::invalid_argument("sampling: logit of token " + std::to_string(i) + " is NaN");
    }
    if (logit == std::numeric_limits<float>::infinity()) {
      throw std::invalid_argument("sampling: logit of token " + std::to_string(i) +
                                  " is +inf (only -inf, a masked token, is allowed)");
    }
    if (logit == -std::numeric_limits<float>::infinity()) continue;
    candidates.push_back({static_cast<int>(i), static_cast<double>(logit)});
  }
  if (candidates.empty()) {
    throw std::invalid_argument("sampling: every one of the " + std::to_string(logits.size()) +
                                " logits is -inf, nothing can be sampled");
  }
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

}  // namespace astrai
