// When may two implementations be asked for the same greedy tokens?
//
// Greedy decoding picks the largest logit. Two correct implementations (another
// BLAS kernel, llama2.c's own loops, a GPU, bf16 storage) compute each logit
// with a small error of their own, so at a step where the two largest logits
// are closer than those errors, either token is a right answer. An exact token
// comparison is sound only over the steps where the oracle's top-two gap
// exceeds the error bound: this header records those gaps while the oracle
// generates, and says how many leading steps are decided.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

#include "reference/generate.h"

namespace astrai::test {

struct GreedyStep {
  int token = 0;          // argmax, lowest id on ties
  double top = 0.0;       // the largest logit
  double runner_up = 0.0; // the second largest (-inf for a one-token row)
  double mean_abs = 0.0;  // mean |logit| of the row
};

// A TokenChooser (reference/generate.h) that is argmax and records each step.
inline TokenChooser recording_argmax(std::vector<GreedyStep>& steps) {
  return [&steps](std::span<const float> logits) {
    GreedyStep s;
    s.token = argmax(logits);
    s.top = logits[size_t(s.token)];
    s.runner_up = -INFINITY;
    for (size_t i = 0; i < logits.size(); ++i) {
      s.mean_abs += std::fabs(double(logits[i]));
      if (int(i) != s.token) s.runner_up = std::max(s.runner_up, double(logits[i]));
    }
    s.mean_abs /= double(logits.size());
    steps.push_back(s);
    return s.token;
  };
}

// The number of leading steps whose choice no logit error within
// rtol * (|logit| + mean|row|) can change: the top two would have to move
// towards each other by more than the gap between them. This is the tolerance
// form of tests/cuda/gpu_test_support.h's compare().
inline size_t decided_steps(const std::vector<GreedyStep>& steps, double rtol) {
  size_t n = 0;
  for (const auto& s : steps) {
    if (std::isinf(s.runner_up)) {  // a one-token row (or all others masked): nothing to confuse
      ++n;
      continue;
    }
    const double bound = rtol * (std::fabs(s.top) + s.mean_abs) + rtol * (std::fabs(s.runner_up) + s.mean_abs);
    if (!(s.top - s.runner_up > bound)) break;
    ++n;
  }
  return n;
}

inline std::vector<int> tokens_of(const std::vector<GreedyStep>& steps) {
  std::vector<int> tokens;
  for (const auto& s : steps) tokens.push_back(s.token);
  return tokens;
}

inline std::vector<int> first(const std::vector<int>& tokens, size_t n) {
  return std::vector<int>(tokens.begin(), tokens.begin() + std::ptrdiff_t(std::min(n, tokens.size())));
}

}  // namespace astrai::test
