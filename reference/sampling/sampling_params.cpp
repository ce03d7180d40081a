// Validation of SamplingParams: bad values are rejected before any sampling.
#include "reference/sampling/sampling_params.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace astrai {
namespace {

// Written so that NaN fails too: every comparison with NaN is false.
void require_range(const char* name, float value, float low, float high) {
  if (!(value >= low && value <= high))
    throw std::invalid_argument(std::string("sampling: ") + name + " must be in [" + std::to_string(low) + ", " +
                                std::to_string(high) + "], got " + std::to_string(value));
}

}  // namespace

void SamplingParams::validate() const {
  if (!std::isfinite(temperature) || temperature < 0.0f) {
    throw std::invalid_argument("sampling: temperature must be a finite number >= 0, got " +
                                std::to_string(temperature));
  }
  if (top_k < 0) {
    throw std::invalid_argument("sampling: top_k must be >= 0 (0 disables it), got " + std::to_string(top_k));
  }
  if (!(top_p > 0.0f && top_p <= 1.0f)) {
    throw std::invalid_argument("sampling: top_p must be in (0, 1], got " + std::to_string(top_p));
  }
  require_range("min_p", min_p, 0.0f, 1.0f);
  require_range("presence_penalty", presence_penalty, -2.0f, 2.0f);
  require_range("frequency_penalty", frequency_penalty, -2.0f, 2.0f);
  if (!std::isfinite(repetition_penalty) || !(repetition_penalty > 0.0f)) {
    throw std::invalid_argument("sampling: repetition_penalty must be a finite number > 0, got " +
                                std::to_string(repetition_penalty));
  }
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0) throw std::invalid_argument("sampling: logit_bias token id must be >= 0, got " + std::to_string(id));
    require_range("logit_bias value", bias, -100.0f, 100.0f);
  }
  std::vector<int> ids;  // one bias per token: a second one would leave the rule ambiguous
  for (const auto& entry : logit_bias) ids.push_back(entry.first);
  std::sort(ids.begin(), ids.end());
  if (const auto twice = std::adjacent_find(ids.begin(), ids.end()); twice != ids.end())
    throw std::invalid_argument("sampling: logit_bias names token " + std::to_string(*twice) + " twice");
}

void SamplingParams::validate(int vocab_size) const {
  validate();
  for (const auto& entry : logit_bias)
    if (entry.first >= vocab_size)
      throw std::invalid_argument("sampling: logit_bias token id " + std::to_string(entry.first) +
                                  " is outside the vocabulary of " + std::to_string(vocab_size));
}

}  // namespace astrai
