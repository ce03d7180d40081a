// An independent float64 statement of a Mixture-of-Experts block, for the
// reference tests, written from transformers' modeling_mixtral.py /
// modeling_qwen2_moe.py / modeling_qwen3_moe.py and gpt-oss's router: scores
// x router^T (+ bias) in float64, the k best experts (ties: lower index),
// their weights by the routing rule, each expert's SwiGLU, and the shared
// expert scaled by sigmoid(gate . x). It shares no code with reference/moe.cpp.
//
// Near-ties: where the k-th and (k+1)-th best float64 scores lie within
// `tie_margin` of each other, float32 rounding may rightly pick either
// expert, and the block is not a continuous function of the weights there;
// the oracle then reports `ambiguous` and the caller discards the case (the
// choice itself is pinned by the exact routing properties, whose inputs are
// the float scores).
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "reference/model_weights.h"

namespace astrai::test {

struct MoeF64 {
  std::vector<double> out;     // [dim]
  // Per element, the block computed on |x| and |W| with the same experts and
  // weights: a bound on the magnitude of every term summed into out[i]
  // (|silu(g)| <= silu(|g|)), so float32's error in out[i] is a small
  // multiple of u * magnitude[i] however much the terms cancel.
  std::vector<double> magnitude;
  std::vector<int> experts;    // chosen, best first
  std::vector<double> weights;
  bool ambiguous = false;      // a near-tie at the top-k boundary
};

// x . w, or with `abs` |x| . |w|.
inline double dot_f64(const std::vector<double>& x, const float* w, bool abs = false) {
  double s = 0.0;
  for (size_t i = 0; i < x.size(); ++i) s += abs ? std::abs(x[i] * double(w[i])) : x[i] * double(w[i]);
  return s;
}

// W_down (silu(x W_gate^T) * (x W_up^T)) with [hidden, dim] / [dim, hidden]
// matrices at the pointers; with `abs`, the same on |x| and |W| (|x| given).
inline std::vector<double> swiglu_f64(const std::vector<double>& x, const float* gate, const float* up,
                                      const float* down, size_t hidden, bool abs = false) {
  const size_t dim = x.size();
  std::vector<double> h(hidden), y(dim, 0.0);
  for (size_t j = 0; j < hidden; ++j) {
    const double g = dot_f64(x, gate + j * dim, abs), u = dot_f64(x, up + j * dim, abs);
    h[j] = g / (1.0 + std::exp(-g)) * u;
  }
  for (size_t i = 0; i < dim; ++i) y[i] = dot_f64(h, down + i * hidden, abs);
  return y;
}

inline MoeF64 moe_f64(const std::vector<double>& x, const LayerWeights& L, const MoeConfig& moe,
                      double tie_margin = 1e-4) {
  const size_t dim = x.size(), n = size_t(moe.n_experts), k = size_t(moe.n_experts_used);
  const size_t eh = size_t(moe.expert_hidden_dim);
  std::vector<double> scores(n);
  for (size_t e = 0; e < n; ++e)
    scores[e] = dot_f64(x, L.router.data() + e * dim) + (L.router_bias.size() ? double(L.router_bias(e)) : 0.0);
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return scores[size_t(a)] > scores[size_t(b)]; });
  MoeF64 r;
  r.experts.assign(order.begin(), order.begin() + long(k));
  if (k < n) r.ambiguous = scores[size_t(order[k - 1])] - scores[size_t(order[k])] < tie_margin;
  const double top = scores[size_t(order[0])];
  if (moe.routing == ExpertRouting::TopKSoftmax) {
    double sum = 0.0;
    for (int e : r.experts) sum += std::exp(scores[size_t(e)] - top);
    for (int e : r.experts) r.weights.push_back(std::exp(scores[size_t(e)] - top) / sum);
  } else {
    double all = 0.0, chosen = 0.0;
    for (double s : scores) all += std::exp(s - top);
    for (int e : r.experts) chosen += std::exp(scores[size_t(e)] - top) / all;
    for (int e : r.experts)
      r.weights.push_back(std::exp(scores[size_t(e)] - top) / all / (moe.norm_topk_prob ? chosen : 1.0));
  }
  std::vector<double> abs_x(x);
  for (double& v : abs_x) v = std::abs(v);
  r.out.assign(dim, 0.0);
  r.magnitude.assign(dim, 0.0);
  for (size_t j = 0; j < k; ++j) {
    const size_t e = size_t(r.experts[j]);
    for (bool abs : {false, true}) {
      const auto y = swiglu_f64(abs ? abs_x : x, L.exp_gate.data() + e * eh * dim, L.exp_up.data() + e * eh * dim,
                                L.exp_down.data() + e * dim * eh, eh, abs);
      for (size_t i = 0; i < dim; ++i) (abs ? r.magnitude : r.out)[i] += r.weights[j] * y[i];
    }
  }
  if (L.shexp_gate_inp.size() > 0) {
    const double gate = 1.0 / (1.0 + std::exp(-dot_f64(x, L.shexp_gate_inp.data())));
    for (bool abs : {false, true}) {
      const auto y = swiglu_f64(abs ? abs_x : x, L.shexp_gate.data(), L.shexp_up.data(), L.shexp_down.data(),
                                size_t(moe.shared_expert_hidden_dim), abs);
      for (size_t i = 0; i < dim; ++i) (abs ? r.magnitude : r.out)[i] += gate * y[i];
    }
  }
  return r;
}

}  // namespace astrai::test
