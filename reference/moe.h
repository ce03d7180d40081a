// The Mixture-of-Experts feed-forward block (Shazeer et al., 2017; Mixtral,
// Qwen MoE): a router scores every expert for each row, the row runs the k
// best-scoring experts (SwiGLU MLPs of their own) and sums their outputs,
// weighted by the routing rule of its family (ExpertRouting,
// reference/model_config.h); Qwen 2 MoE adds a shared expert every row runs,
// scaled by a sigmoid gate.
#pragma once

#include <span>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "reference/model_weights.h"

namespace astrai {

// The experts one row runs, best first, with their weights.
struct ExpertChoice {
  std::vector<int> experts;    // k distinct expert indices
  std::vector<float> weights;  // weights[j] scales expert experts[j]'s output
  // How near the choice is to a tie: (s_k - s_{k+1}) / (|s_k| + mean |s|),
  // the gap between the k-th and (k+1)-th best scores relative to the
  // scores' size; infinity when every expert runs. A computation whose
  // scores carry a relative error larger than this may rightly choose
  // another expert (tests comparing with llama.cpp stop there).
  float margin = 0.0f;
};

// Routes one row from its router scores (x router^T + router_bias):
// the k largest scores are chosen (ties: the lower expert index first, so the
// choice is a function of the scores alone, batch invariant and the same on
// every backend), best first; their weights follow `moe.routing`. A NaN
// score ranks below every number (a row whose hidden state is NaN gets NaN
// weights and output, as a dense layer's would, and throws nothing that
// would fail the rest of its batch); k outside [1, scores.size()] throws.
// Choosing on the scores rather than on softmax(scores) picks the same
// experts (softmax is increasing) without the rounding of exp, which can
// make two different scores' probabilities equal.
ExpertChoice route(std::span<const float> scores, const MoeConfig& moe);

// The router's scores for each row: x router^T (+ router_bias). [rows, n_experts]
xt::xtensor<float, 2> router_scores(const xt::xtensor<float, 2>& x, const LayerWeights& layer);

// MoE(x) for x: [rows, dim] (already normalised by ffn_norm), one sparse layer:
// row r gets sum_j weights[j] * FFN_{experts[j]}(x[r]), plus with a shared
// expert sigmoid(shexp_gate_inp . x[r]) * FFN_shared(x[r]). `choices`, when
// given, receives each row's routing (for tests and the CUDA comparison).
xt::xtensor<float, 2> moe_ffn(const xt::xtensor<float, 2>& x, const LayerWeights& layer, const ModelConfig& config,
                              std::vector<ExpertChoice>* choices = nullptr);

}  // namespace astrai
