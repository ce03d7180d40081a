// An independent float64 statement of the sampling rules, for the tests to
// compare the pipeline against. It is written differently from the code under
// test on purpose: no sorting and no shared helpers; each rule is a count over
// the vocabulary ("how many tokens are more likely than this one?"), which is
// slow (O(n^2)) but reads as the definition.
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <vector>

namespace astrai::test {

// Token j is more likely than token i: larger (tempered) logit, or the same
// logit and a lower id.
inline bool ahead_of(const std::vector<double>& z, std::size_t j, std::size_t i) {
  return z[j] > z[i] || (z[j] == z[i] && j < i);
}

// exp(z_i - max) / sum over the tokens with keep[i], 0 elsewhere; sums in id order.
inline std::vector<double> oracle_softmax(const std::vector<double>& z, const std::vector<bool>& keep) {
  double max_z = -std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < z.size(); ++i)
    if (keep[i] && z[i] > max_z) max_z = z[i];
  std::vector<double> p(z.size(), 0.0);
  double total = 0.0;
  for (std::size_t i = 0; i < z.size(); ++i) {
    if (keep[i]) {
      p[i] = std::exp(z[i] - max_z);
      total += p[i];
    }
  }
  for (double& v : p) v /= total;
  return p;
}

// The index of the first maximum, as llama2.c's argmax returns.
inline std::size_t oracle_argmax(std::span<const float> logits) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[best]) best = i;
  return best;
}

// The final distribution over the vocabulary that temperature -> top-k ->
// top-p -> min-p -> softmax gives, from the rules in docs/sampling.md.
inline std::vector<double> expected_distribution(std::span<const float> logits, float temperature, int top_k,
                                                 float top_p, float min_p = 0.0f) {
  const std::size_t n = logits.size();
  if (temperature == 0.0f) {
    std::vector<double> one_hot(n, 0.0);
    one_hot[oracle_argmax(logits)] = 1.0;
    return one_hot;
  }
  std::vector<bool> keep(n);
  std::vector<double> z(n);
  for (std::size_t i = 0; i < n; ++i) {
    keep[i] = std::isfinite(logits[i]);
    z[i] = keep[i] ? static_cast<double>(logits[i]) / static_cast<double>(temperature)
                   : -std::numeric_limits<double>::infinity();
  }
  if (top_k > 0) {  // kept iff fewer than k kept tokens are ahead of it
    std::vector<bool> next(n, false);
    for (std::size_t i = 0; i < n; ++i) {
      if (!keep[i]) continue;
      int ahead = 0;
      for (std::size_t j = 0; j < n; ++j) ahead += (keep[j] && ahead_of(z, j, i)) ? 1 : 0;
      next[i] = ahead < top_k;
    }
    keep = next;
  }
  if (top_p < 1.0f) {  // kept iff the mass strictly ahead of it is still < p
    const std::vector<double> q = oracle_softmax(z, keep);
    std::vector<bool> next(n, false);
    for (std::size_t i = 0; i < n; ++i) {
      if (!keep[i]) continue;
      double mass_ahead = 0.0;
      for (std::size_t j = 0; j < n; ++j)
        if (keep[j] && ahead_of(z, j, i)) mass_ahead += q[j];
      next[i] = mass_ahead < static_cast<double>(top_p);
    }
    keep = next;
  }
  if (min_p > 0.0f) {  // kept iff its probability is at least min_p times the largest kept one's
    double max_z = -std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < n; ++i)
      if (keep[i] && z[i] > max_z) max_z = z[i];
    // p_i / p_max = exp(z_i) / exp(max_z): the largest weight is exp(0) = 1 exactly.
    for (std::size_t i = 0; i < n; ++i) keep[i] = keep[i] && std::exp(z[i] - max_z) >= static_cast<double>(min_p);
  }
  return oracle_softmax(z, keep);
}

}  // namespace astrai::test
