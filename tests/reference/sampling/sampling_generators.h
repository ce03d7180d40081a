// RapidCheck generators of logits rows for the sampling properties.
#pragma once

#include <limits>
#include <vector>

#include <rapidcheck.h>

namespace astrai::test {

// A row of 1..max_size logits in [-20, 20] (steps of 0.01, so some ties), about
// one in ten masked to -inf, token 0 always finite.
inline rc::Gen<std::vector<float>> gen_logits(int max_size = 64) {
  return rc::gen::mapcat(rc::gen::inRange(1, max_size + 1), [](int n) {
    return rc::gen::map(rc::gen::container<std::vector<int>>(n, rc::gen::inRange(-2000, 2001)),
                        [](const std::vector<int>& raw) {
                          std::vector<float> logits(raw.size());
                          for (std::size_t i = 0; i < raw.size(); ++i) {
                            // A raw value ending in 7 (about 10%) masks the token; token 0
                            // never is, so the row always has a finite logit.
                            const bool masked = (raw[i] % 10 == 7 || raw[i] % 10 == -7) && i > 0;
                            logits[i] = masked ? -std::numeric_limits<float>::infinity()
                                               : static_cast<float>(raw[i]) / 100.0f;
                          }
                          return logits;
                        });
  });
}

// A row of 1..max_size logits from {0, 1, 2, 3}: ties everywhere.
inline rc::Gen<std::vector<float>> gen_tied_logits(int max_size = 40) {
  return rc::gen::mapcat(rc::gen::inRange(1, max_size + 1), [](int n) {
    return rc::gen::map(rc::gen::container<std::vector<int>>(n, rc::gen::inRange(0, 4)),
                        [](const std::vector<int>& raw) { return std::vector<float>(raw.begin(), raw.end()); });
  });
}

// top_p in (0, 1] in steps of 1/1000, with 1 itself common enough to be tested.
inline rc::Gen<float> gen_top_p() {
  return rc::gen::map(rc::gen::inRange(1, 1101), [](int i) { return i >= 1000 ? 1.0f : static_cast<float>(i) / 1000.0f; });
}

// temperature in [0.05, 3.0] in steps of 0.01.
inline rc::Gen<float> gen_temperature() {
  return rc::gen::map(rc::gen::inRange(5, 301), [](int i) { return static_cast<float>(i) / 100.0f; });
}

}  // namespace astrai::test
