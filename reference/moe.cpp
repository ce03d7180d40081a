#include "reference/moe.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

#include <xtensor/xview.hpp>

#include "reference/linear.h"
#include "reference/swiglu.h"

namespace astrai {
namespace {

// softmax(v) in float: exp(v - max), divided by their sum (a new vector;
// attention.cpp has an in-place one).
std::vector<float> softmax_copy(std::span<const float> v) {
  const float max = *std::max_element(v.begin(), v.end());
  std::vector<float> p(v.size());
  float sum = 0.0f;
  for (size_t i = 0; i < v.size(); ++i) sum += p[i] = std::exp(v[i] - max);
  for (float& x : p) x /= sum;
  return p;
}

// One row of x as a [1, dim] matrix.
xt::xtensor<float, 2> row_of(const xt::xtensor<float, 2>& x, size_t r) {
  xt::xtensor<float, 2> one({1, x.shape(1)});
  std::copy(x.data() + r * x.shape(1), x.data() + (r + 1) * x.shape(1), one.data());
  return one;
}

// x W_e^T (+ b_e, row e of a [n_experts, n] bias), the bias added after the
// product, in float.
xt::xtensor<float, 2> expert_linear(const xt::xtensor<float, 2>& x, const xt::xtensor<float, 3>& W,
                                    const xt::xtensor<float, 2>& b, size_t e) {
  xt::xtensor<float, 2> y = linear_slice(x, W, e);
  if (b.size() > 0) y += xt::row(b, e);  // broadcast over the rows
  return y;
}

// Expert e's gated feed-forward:
//   W_down_e act(x W_gate_e^T + b_gate_e, x W_up_e^T + b_up_e)^T + b_down_e,
// act(g, u) = silu(g) * u, or gpt-oss's clamped_swiglu(g, u, limit) when the
// config sets a limit; the biases only with expert_biases (gpt-oss).
xt::xtensor<float, 2> expert_ffn(const xt::xtensor<float, 2>& x, const LayerWeights& L, const MoeConfig& moe,
                                 size_t e) {
  const xt::xtensor<float, 2> gate = expert_linear(x, L.exp_gate, L.exp_gate_bias, e);
  const xt::xtensor<float, 2> up = expert_linear(x, L.exp_up, L.exp_up_bias, e);
  const xt::xtensor<float, 2> hidden = moe.swiglu_limit > 0.0f ? clamped_swiglu(gate, up, moe.swiglu_limit)
                                                               : xt::xtensor<float, 2>(silu(gate) * up);
  return expert_linear(hidden, L.exp_down, L.exp_down_bias, e);
}

float sigmoid(float z) { return 1.0f / (1.0f + std::exp(-z)); }

}  // namespace

ExpertChoice route(std::span<const float> scores, const MoeConfig& moe) {
  const size_t n = scores.size(), k = size_t(moe.n_experts_used);
  if (k < 1 || k > n)
    throw std::invalid_argument("route: top-" + std::to_string(k) + " of " + std::to_string(n) + " experts");
  // A NaN score (a row whose hidden state is NaN: a broken model) ranks
  // below every number, so the sort keeps a strict order; the row's weights
  // and output are then NaN, as a dense layer's would be, and only that row's.
  const auto rank = [&](int e) {
    const float s = scores[size_t(e)];
    return std::isnan(s) ? -std::numeric_limits<float>::infinity() : s;
  };
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  // Best first; stable, so equal scores keep index order (the tie rule).
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return rank(a) > rank(b); });
  ExpertChoice choice;
  choice.experts.assign(order.begin(), order.begin() + std::ptrdiff_t(k));
  choice.margin = std::numeric_limits<float>::infinity();
  if (k < n) {
    float mean_abs = 0.0f;
    for (float s : scores) mean_abs += std::abs(s) / float(n);
    const float kth = scores[size_t(order[k - 1])];
    choice.margin = (kth - scores[size_t(order[k])]) / (std::abs(kth) + mean_abs);
  }
  std::vector<float> chosen_scores;
  for (int e : choice.experts) chosen_scores.push_back(scores[size_t(e)]);
  if (moe.routing == ExpertRouting::TopKSoftmax) {
    choice.weights = softmax_copy(chosen_scores);
    return choice;
  }
  const std::vector<float> p = softmax_copy(scores);
  float sum = 0.0f;
  for (int e : choice.experts) {
    choice.weights.push_back(p[size_t(e)]);
    sum += p[size_t(e)];
  }
  if (moe.norm_topk_prob)
    for (float& w : choice.weights) w /= sum;
  return choice;
}

xt::xtensor<float, 2> router_scores(const xt::xtensor<float, 2>& x, const LayerWeights& L) {
  xt::xtensor<float, 2> scores = linear(x, L.router);
  if (L.router_bias.size() > 0) scores += L.router_bias;  // broadcast over the rows
  return scores;
}

xt::xtensor<float, 2> moe_ffn(const xt::xtensor<float, 2>& x, const LayerWeights& L, const ModelConfig& c,
                              std::vector<ExpertChoice>* choices) {
  const xt::xtensor<float, 2> scores = router_scores(x, L);
  const size_t rows = x.shape(0), n_experts = scores.shape(1);
  xt::xtensor<float, 2> out = xt::zeros<float>({rows, size_t(c.dim)});
  if (choices) choices->clear();
  // Row by row (each product a matrix-vector one, linear.h): a row's output
  // is the same whatever else is in the batch.
  for (size_t r = 0; r < rows; ++r) {
    const ExpertChoice choice = route(std::span<const float>(scores.data() + r * n_experts, n_experts), c.moe);
    const xt::xtensor<float, 2> xr = row_of(x, r);
    xt::xtensor<float, 2> sum = xt::zeros<float>({size_t(1), size_t(c.dim)});
    for (size_t j = 0; j < choice.experts.size(); ++j)
      sum += choice.weights[j] * expert_ffn(xr, L, c.moe, size_t(choice.experts[j]));
    if (L.shexp_gate_inp.size() > 0) {
      const float gate = sigmoid(linear(xr, L.shexp_gate_inp)(0, 0));
      sum += gate * swiglu(xr, L.shexp_gate, L.shexp_up, L.shexp_down);
    }
    std::copy(sum.begin(), sum.end(), out.data() + r * size_t(c.dim));
    if (choices) choices->push_back(choice);
  }
  return out;
}

}  // namespace astrai
