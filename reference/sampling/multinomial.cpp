// Inverse-CDF draw over a discrete distribution (see multinomial.h).
#include "reference/sampling/multinomial.h"

#include <stdexcept>
#include <string>

namespace astrai {

std::size_t inverse_cdf(std::span<const double> probabilities, double u) {
  if (probabilities.empty()) throw std::invalid_argument("inverse_cdf: no probabilities to draw from");
  if (!(u >= 0.0 && u < 1.0)) throw std::invalid_argument("inverse_cdf: u must be in [0, 1), got " + std::to_string(u));
  double total = 0.0;
  std::size_t last_positive = probabilities.size();
  for (std::size_t i = 0; i < probabilities.size(); ++i) {
    total += probabilities[i];
    if (probabilities[i] > 0.0) last_positive = i;
  }
  if (last_positive == probabilities.size()) {
    throw std::invalid_argument("inverse_cdf: every probability is zero");
  }
  const double target = u * total;
  double cumulative = 0.0;
  for (std::size_t i = 0; i < probabilities.size(); ++i) {
    cumulative += probabilities[i];
    if (cumulative > target) return i;
  }
  return last_positive;
}

}  // namespace astrai
