// When may two implementations of a Mixture-of-Experts model be asked for
// the same logits? Each row runs the k experts with the best router scores;
// where the k-th and (k+1)-th scores are closer than the scores' errors, a
// correct implementation may run the other expert (reference/moe.h,
// ExpertChoice::margin). These helpers find how far a run stays clear of
// such near-ties, as greedy_margins.h does for the argmax.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "reference/dense_kv_cache.h"
#include "reference/forward.h"

namespace astrai::test {

// Mixture-of-Experts models: for each position of `tokens`, the smallest
// routing margin (reference/moe.h ExpertChoice::margin) of it and every
// position before it, i.e. how near a tie any expert choice its logits
// depend on came; infinity for dense models.
inline std::vector<float> routing_margins(const ModelWeights& w, const std::vector<int>& tokens) {
  if (w.config.moe.n_experts == 0) return std::vector<float>(tokens.size(), INFINITY);
  std::vector<BatchToken> batch;
  for (size_t i = 0; i < tokens.size(); ++i) batch.push_back({tokens[i], 0, int(i), i + 1 == tokens.size()});
  DenseKVCache cache(w.config, 1);
  std::vector<float> margins;
  forward(w, batch, cache, &margins);
  for (size_t i = 1; i < margins.size(); ++i) margins[i] = std::min(margins[i], margins[i - 1]);
  return margins;
}

// How many steps after `prompt` along `generated` have every expert choice
// behind their logits (positions < prompt + step + 1) decided at `rtol`:
// another implementation (llama.cpp, the GPU) computes router scores with
// relative errors of its own, so where two experts' scores are closer it may
// rightly run the other one, and from there on the two runs are different
// computations (a routing flip moves the output by a whole expert's share,
// not by rounding).
inline size_t routed_steps(const ModelWeights& w, const std::vector<int>& prompt, const std::vector<int>& generated,
                           double rtol) {
  std::vector<int> all(prompt);
  all.insert(all.end(), generated.begin(), generated.end());
  const std::vector<float> margins = routing_margins(w, all);
  size_t s = 0;
  while (s < generated.size() && margins[prompt.size() - 1 + s] >= rtol) ++s;
  return s;
}

}  // namespace astrai::test
