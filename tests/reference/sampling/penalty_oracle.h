// An independent float64 statement of the penalties and logit bias, for the
// tests: each token's new logit computed from the whole history by counting,
// in the order the rules are written (OpenAI's formula, then the bias), with
// none of penalties.cpp's bookkeeping (no counts table, no adjustment list).
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <span>
#include <utility>
#include <vector>

namespace astrai::test {

struct PenaltyCase {
  float presence = 0.0f, frequency = 0.0f, repetition = 1.0f;
  std::vector<std::pair<int, float>> bias;
};

// The penalised row in float64 (-inf for a banned token).
inline std::vector<double> oracle_penalized(std::span<const float> logits, std::span<const int> prompt,
                                            std::span<const int> generated, const PenaltyCase& c) {
  std::vector<double> out(logits.size());
  for (std::size_t i = 0; i < logits.size(); ++i) {
    const int id = int(i);
    const auto count = std::count(generated.begin(), generated.end(), id);
    const bool seen = count > 0 || std::find(prompt.begin(), prompt.end(), id) != prompt.end();
    double l = logits[i];
    if (seen && c.repetition != 1.0f) l = l > 0 ? l / c.repetition : l * c.repetition;
    l = l - double(c.frequency) * double(count);
    if (count > 0) l = l - double(c.presence);
    for (const auto& [token, b] : c.bias)
      if (token == id) l = b <= -100.0f ? -std::numeric_limits<double>::infinity() : l + b;
    out[i] = l;
  }
  return out;
}

}  // namespace astrai::test
