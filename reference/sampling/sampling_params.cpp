// Validation of SamplingParams: bad values are rejected before any sampling.
#include "reference/sampling/sampling_params.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace astrai {

void SamplingParams::validate() const {
  if (!std::isfinite(temperature) || temperature < 0.0f) {
    throw std::invalid_argument("sampling: temperature must be a finite number >= 0, got " +
                                std::to_string(temperature));
  }
  if (top_k < 0) {
    throw std::invalid_argument("sampling: top_k must be >= 0 (0 disables it), got " + std::to_string(top_k));
  }
  // Written so that NaN fails too: every comparison with NaN is false.
  if (!(top_p > 0.0f && top_p <= 1.0f)) {
    throw std::invalid_argument("sampling: top_p must be in (0, 1], got " + std::to_string(top_p));
  }
}

}  // namespace astrai
