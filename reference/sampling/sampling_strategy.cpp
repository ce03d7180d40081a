// The rules of the temperature, top-k and top-p strategies.
#include "reference/sampling/sampling_strategy.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace astrai {

TemperatureStrategy::TemperatureStrategy(float temperature) : temperature_(temperature) {
  if (!std::isfinite(temperature) || temperature <= 0.0f) {
    throw std::invalid_argument("TemperatureStrategy: temperature must be finite and > 0, got " +
                                std::to_string(temperature));
  }
}

void TemperatureStrategy::apply(Candidates& candidates) const {
  // In float64 a float logit over a float temperature cannot overflow.
  for (Candidate& c : candidates) c.logit /= temperature_;
}

std::string TemperatureStrategy::describe() const { return "temperature(" + std::to_string(temperature_) + ")"; }

TopKStrategy::TopKStrategy(int k) : k_(k) {
  if (k < 0) throw std::invalid_argument("TopKStrategy: k must be >= 0 (0 disables it), got " + std::to_string(k));
}

void TopKStrategy::apply(Candidates& candidates) const {
  const auto k = static_cast<std::size_t>(k_);
  if (k == 0 || candidates.size() <= k) return;
  // more_likely breaks logit ties by lower id: the first k in that order.
  std::partial_sort(candidates.begin(), candidates.begin() + k_, candidates.end(), more_likely);
  candidates.resize(k);
}

std::string TopKStrategy::describe() const { return "top_k(" + std::to_string(k_) + ")"; }

TopPStrategy::TopPStrategy(float p) : p_(p) {
  if (!(p > 0.0f && p <= 1.0f)) {
    throw std::invalid_argument("TopPStrategy: p must be in (0, 1], got " + std::to_string(p));
  }
}

void TopPStrategy::apply(Candidates& candidates) const {
  if (p_ >= 1.0f) return;
  // exp is monotone, so logit order is probability order, and more_likely's
  // tie rule (lower id first) is the tie rule for equal probabilities.
  std::sort(candidates.begin(), candidates.end(), more_likely);
  const std::vector<double> probabilities = softmax(candidates);
  const double threshold = static_cast<double>(p_);
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

std::string TopPStrategy::describe() const { return "top_p(" + std::to_string(p_) + ")"; }

}  // namespace astrai
