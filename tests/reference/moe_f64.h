// An independent float64 statement of a Mixture-of-Experts block, for the
// reference tests, written from transformers' modeling_mixtral.py /
// modeling_qwen2_moe.py / modeling_qwen3_moe.py and gpt-oss's router: scores
// x router^T (+ bias) in float64, the k best experts (ties: lower index),
// their weights by the routing rule, each expert's SwiGLU (gpt-oss's: with
// biases and the clamped activation, from modeling_gpt_oss.py), and the shared
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
  // The same with every sum of terms taken as their root sum of squares: the
  // size float32's rounding errors in out[i] have, give or take a small
  // factor, when the terms' signs are random (the forward-pass test's
  // cancellation check).
  std::vector<double> rss;
  std::vector<int> experts;    // chosen, best first
  std::vector<double> weights;
  bool ambiguous = false;      // a near-tie at the top-k boundary
};

// How the experts' sums are taken: as they are, as sums of the terms'
// magnitudes, or as their root sum of squares (on sizes, never negative).
enum class Terms { Value, Abs, Rss };

// x . w, |x| . |w|, or sqrt(sum (x_i w_i)^2).
inline double dot_f64(const std::vector<double>& x, const float* w, Terms terms = Terms::Value) {
  double s = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double p = x[i] * double(w[i]);
    s += terms == Terms::Value ? p : terms == Terms::Abs ? std::abs(p) : p * p;
  }
  return terms == Terms::Rss ? std::sqrt(s) : s;
}

// An expert's optional parts (gpt-oss): biases of its gate, up and down
// projections (null: none) and the clamped activation's limit (0: silu).
struct ExpertExtras {
  const float* gate_bias = nullptr;
  const float* up_bias = nullptr;
  const float* down_bias = nullptr;
  double limit = 0.0;
};

// W_down act(x W_gate^T + b_g, x W_up^T + b_u) + b_d with [hidden, dim] /
// [dim, hidden] matrices at the pointers, act(g, u) = silu(g) u, or with a
// limit gpt-oss's (u' + 1) g' sigmoid(1.702 g') for g' = min(g, limit),
// u' = clamp(u, -limit, limit) (transformers' GptOssExperts.forward). With
// Terms::Abs, a bound on every term's size instead: the same on |x|, |W| and
// |b|, the activation's magnitude taken as |g| |u| (silu(|g|) <= |g|) or,
// clamped, as (|u| + 1) |g|, which bounds both the value and how an error
// in g or u moves it; Terms::Rss the same with root sums of squares.
inline std::vector<double> swiglu_f64(const std::vector<double>& x, const float* gate, const float* up,
                                      const float* down, size_t hidden, Terms terms = Terms::Value,
                                      ExpertExtras extras = {}) {
  const size_t dim = x.size();
  const bool abs = terms != Terms::Value;
  // A dot product plus its bias, summed as the terms are.
  const auto affine = [&](const std::vector<double>& in, const float* w, const float* b, size_t i) {
    const double d = dot_f64(in, w, terms), bias = b ? double(b[i]) : 0.0;
    return terms == Terms::Value ? d + bias : terms == Terms::Abs ? d + std::abs(bias) : std::hypot(d, bias);
  };
  std::vector<double> h(hidden), y(dim, 0.0);
  for (size_t j = 0; j < hidden; ++j) {
    const double g = affine(x, gate + j * dim, extras.gate_bias, j);
    const double u = affine(x, up + j * dim, extras.up_bias, j);
    if (abs) {
      h[j] = extras.limit > 0.0 ? (u + 1.0) * g : g * u;
    } else if (extras.limit > 0.0) {
      const double gc = std::min(g, extras.limit), uc = std::clamp(u, -extras.limit, extras.limit);
      h[j] = (uc + 1.0) * gc / (1.0 + std::exp(-1.702 * gc));
    } else {
      h[j] = g / (1.0 + std::exp(-g)) * u;
    }
  }
  for (size_t i = 0; i < dim; ++i) y[i] = affine(h, down + i * hidden, extras.down_bias, i);
  return y;
}

// Expert e's biases and activation limit in a layer of `moe`.
inline ExpertExtras expert_extras(const LayerWeights& L, const MoeConfig& moe, size_t e) {
  const size_t eh = size_t(moe.expert_hidden_dim), dim = L.exp_down.size() ? L.exp_down.shape(1) : 0;
  const bool biased = L.exp_gate_bias.size() > 0;
  return {biased ? L.exp_gate_bias.data() + e * eh : nullptr, biased ? L.exp_up_bias.data() + e * eh : nullptr,
          biased ? L.exp_down_bias.data() + e * dim : nullptr, double(moe.swiglu_limit)};
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
  r.rss.assign(dim, 0.0);  // squares until the end
  // Adds weight * (the block of `terms` on x) to out, magnitude or rss.
  const auto add = [&](Terms terms, double weight, const auto& block) {
    const auto y = block(terms == Terms::Value ? x : abs_x, terms);
    for (size_t i = 0; i < dim; ++i) {
      if (terms == Terms::Value) r.out[i] += weight * y[i];
      if (terms == Terms::Abs) r.magnitude[i] += weight * y[i];
      if (terms == Terms::Rss) r.rss[i] += weight * y[i] * weight * y[i];
    }
  };
  for (Terms terms : {Terms::Value, Terms::Abs, Terms::Rss}) {
    for (size_t j = 0; j < k; ++j) {
      const size_t e = size_t(r.experts[j]);
      add(terms, r.weights[j], [&](const std::vector<double>& in, Terms t) {
        return swiglu_f64(in, L.exp_gate.data() + e * eh * dim, L.exp_up.data() + e * eh * dim,
                          L.exp_down.data() + e * dim * eh, eh, t, expert_extras(L, moe, e));
      });
    }
    if (L.shexp_gate_inp.size() > 0) {
      const double gate = 1.0 / (1.0 + std::exp(-dot_f64(x, L.shexp_gate_inp.data())));
      add(terms, gate, [&](const std::vector<double>& in, Terms t) {
        return swiglu_f64(in, L.shexp_gate.data(), L.shexp_up.data(), L.shexp_down.data(),
                          size_t(moe.shared_expert_hidden_dim), t);
      });
    }
  }
  for (double& v : r.rss) v = std::sqrt(v);
  return r;
}

}  // namespace astrai::test
