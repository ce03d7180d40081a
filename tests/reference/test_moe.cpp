// Properties of reference/moe.h, the Mixture-of-Experts block: the routing
// against a float64 recomputation (chosen experts exact, weights to a derived
// bound), the tie rule on equal scores, the block against an independent
// float64 block (tests/reference/moe_f64.h), k = n_experts against the dense
// mixture it must equal, batch invariance (exact, and why), and each option
// (renormalisation, the routing rule, the shared expert, the router bias)
// moving the output far beyond the float64 comparison's tolerance.
#include <cmath>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "reference/moe.h"
#include "reference/synthetic_model.h"
#include "tests/reference/draw_moe.h"
#include "tests/reference/moe_f64.h"
#include "tests/reference/random_tensors.h"

using namespace astrai;

namespace {

// A one-layer sparse model's config, its MoE options drawn.
ModelConfig draw_moe_config() {
  ModelConfig c;
  c.dim = *rc::gen::inRange(1, 48);
  c.hidden_dim = 8;
  c.n_layers = 1;
  c.n_heads = 1;
  c.n_kv_heads = 1;
  c.explicit_head_dim = 2;
  c.vocab_size = 4;
  c.max_seq_len = 4;
  test::draw_moe_options(c, 16, 40);
  c.validate();
  return c;
}

std::vector<double> row_f64(const xt::xtensor<float, 2>& x, size_t r) {
  return std::vector<double>(x.data() + r * x.shape(1), x.data() + (r + 1) * x.shape(1));
}

// max over elements of |got - want| / magnitude (moe_f64.h: the size of the
// terms summed into the element, so cancellation cannot inflate it); NaN
// never passes.
double error_f64(const xt::xtensor<float, 2>& got, const std::vector<std::vector<double>>& want,
                 const std::vector<std::vector<double>>& magnitude) {
  double worst = 0.0;
  for (size_t r = 0; r < want.size(); ++r)
    for (size_t i = 0; i < want[r].size(); ++i) {
      if (!std::isfinite(got(r, i))) return std::numeric_limits<double>::infinity();
      worst = std::max(worst, std::abs(got(r, i) - want[r][i]) / std::max(magnitude[r][i], 1e-30));
    }
  return worst;
}

// Rows of unit-ish scale, like an ffn_norm output.
xt::xtensor<float, 2> draw_rows(const ModelConfig& c) {
  return test::random_matrix(size_t(*rc::gen::inRange(1, 6)), size_t(c.dim), *rc::gen::arbitrary<uint64_t>(), 1.5f);
}

// float32 against float64 through one block, element by element relative to
// the magnitude of its terms (error_f64): dot products of at most 48 and 40
// terms (error <= n u sum |x||w|, u = 6e-8, so <= 3e-6 of the magnitude), the
// softmax's weights (<= (n + 4) u relative) and the router scores' own
// rounding, which moves the weights. Measured worst: 2.8e-7 of the magnitude
// over 20,000 cases of each block property (RC_PARAMS="max_success=20000");
// 1e-5 leaves 36 times that, and each option moves the output by >= 1e-3
// (the last test case).
constexpr double kBlockTolerance = 1e-5;

}  // namespace

TEST_CASE("route picks the k best scores, ties to the lower index, with the family's weights") {
  rc::prop("experts exact, weights ~ float64", [] {
    MoeConfig m;
    m.n_experts = *rc::gen::inRange(1, 17);
    m.n_experts_used = *rc::gen::inRange(1, m.n_experts + 1);
    m.routing = *rc::gen::element(ExpertRouting::SoftmaxTopK, ExpertRouting::TopKSoftmax);
    m.norm_topk_prob = *rc::gen::arbitrary<bool>();
    // Scores from a few values (ties are common) or spread out.
    const bool ties = *rc::gen::arbitrary<bool>();
    std::vector<float> scores;
    for (int e = 0; e < m.n_experts; ++e)
      scores.push_back(ties ? float(*rc::gen::inRange(-2, 3)) : float(*rc::gen::inRange(-4000, 4001)) / 1000.0f);
    const ExpertChoice got = route(scores, m);

    // The expected experts, built another way: values from the largest down,
    // and within one value the indices upwards.
    std::vector<float> values(scores);
    std::sort(values.begin(), values.end(), std::greater<>());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    std::vector<int> want;
    for (float v : values)
      for (int e = 0; e < m.n_experts; ++e)
        if (scores[size_t(e)] == v && int(want.size()) < m.n_experts_used) want.push_back(e);
    RC_ASSERT(got.experts == want);

    // Weights in float64 from the same float scores: softmax over all (or the
    // chosen), normalised as the rule says. float32's softmax of n <= 16
    // terms is within (n + 4) u ~ 1.2e-6 relative; 4e-6 allows the division.
    double all = 0.0, chosen = 0.0, top = *std::max_element(scores.begin(), scores.end());
    for (float s : scores) all += std::exp(double(s) - top);
    for (int e : want) chosen += std::exp(double(scores[size_t(e)]) - top);
    for (size_t j = 0; j < want.size(); ++j) {
      const double p = std::exp(double(scores[size_t(want[j])]) - top);
      const double w = m.routing == ExpertRouting::TopKSoftmax ? p / chosen
                       : m.norm_topk_prob                      ? p / chosen
                                                               : p / all;
      RC_ASSERT(std::abs(got.weights[j] - w) <= 4e-6 * w);
    }
  });
}

TEST_CASE("route refuses a top-k beyond its experts and passes a NaN score on") {
  MoeConfig m;
  m.n_experts = 4;
  m.n_experts_used = 5;
  const std::vector<float> four{1, 2, 3, 4};
  CHECK_THROWS_WITH(route(four, m), Catch::Contains("top-5 of 4"));
  // A NaN score (a broken model's row) is never chosen over a number, and
  // makes the row's weights NaN rather than throwing: the other rows of the
  // batch keep their work.
  m.n_experts_used = 2;
  const std::vector<float> nan{1, std::nanf(""), 3, 4};
  const ExpertChoice choice = route(nan, m);
  CHECK(choice.experts == std::vector<int>{3, 2});
  CHECK(std::isnan(choice.weights[0]));
}

TEST_CASE("the MoE block matches an independent float64 block") {
  rc::prop("moe_ffn ~ float64", [] {
    const ModelConfig c = draw_moe_config();
    const ModelWeights w = make_synthetic_weights(c, *rc::gen::arbitrary<uint64_t>());
    const auto x = draw_rows(c);
    std::vector<ExpertChoice> choices;
    const auto got = moe_ffn(x, w.layers[0], c, &choices);
    std::vector<std::vector<double>> want, magnitude;
    for (size_t r = 0; r < x.shape(0); ++r) {
      const auto f64 = test::moe_f64(row_f64(x, r), w.layers[0], c.moe);
      RC_PRE(!f64.ambiguous);  // a near-tie at the top-k boundary: either choice is right (moe_f64.h)
      RC_ASSERT(choices[r].experts == f64.experts);
      want.push_back(f64.out);
      magnitude.push_back(f64.magnitude);
    }
    RC_LOG() << c.describe() << "\n";
    RC_ASSERT(error_f64(got, want, magnitude) <= kBlockTolerance);
  });
}

TEST_CASE("with k = n_experts the block is the dense mixture of all experts") {
  // Every expert runs: with renormalised softmax weights (or top-k then
  // softmax, the same thing here) the block is sum_e softmax(scores)_e FFN_e(x),
  // computed here from that formula with no selection at all.
  rc::prop("top-n == dense mixture", [] {
    ModelConfig c = draw_moe_config();
    c.moe.n_experts_used = c.moe.n_experts;
    c.moe.norm_topk_prob = true;
    const ModelWeights w = make_synthetic_weights(c, *rc::gen::arbitrary<uint64_t>());
    const LayerWeights& L = w.layers[0];
    const auto x = draw_rows(c);
    const auto got = moe_ffn(x, L, c);
    std::vector<std::vector<double>> want, magnitude;
    const size_t dim = size_t(c.dim), eh = size_t(c.moe.expert_hidden_dim);
    for (size_t r = 0; r < x.shape(0); ++r) {
      const auto xr = row_f64(x, r);
      std::vector<double> p;
      double sum = 0.0;
      for (int e = 0; e < c.moe.n_experts; ++e) {
        double s = test::dot_f64(xr, L.router.data() + size_t(e) * dim) + (L.router_bias.size() ? L.router_bias(e) : 0.0);
        p.push_back(std::exp(s));
        sum += p.back();
      }
      std::vector<double> out(dim, 0.0);
      for (size_t e = 0; e < p.size(); ++e) {
        const auto y = test::swiglu_f64(xr, L.exp_gate.data() + e * eh * dim, L.exp_up.data() + e * eh * dim,
                                        L.exp_down.data() + e * dim * eh, eh, test::Terms::Value, test::expert_extras(L, c.moe, e));
        for (size_t i = 0; i < dim; ++i) out[i] += p[e] / sum * y[i];
      }
      if (c.options.shared_expert) {
        const double g = 1.0 / (1.0 + std::exp(-test::dot_f64(xr, L.shexp_gate_inp.data())));
        const auto y = test::swiglu_f64(xr, L.shexp_gate.data(), L.shexp_up.data(), L.shexp_down.data(),
                                        size_t(c.moe.shared_expert_hidden_dim));
        for (size_t i = 0; i < dim; ++i) out[i] += g * y[i];
      }
      want.push_back(out);
      // The magnitudes of the terms: moe_f64 with every expert chosen (its
      // weights, being the same softmax, agree with p / sum).
      magnitude.push_back(test::moe_f64(xr, L, c.moe).magnitude);
    }
    RC_ASSERT(error_f64(got, want, magnitude) <= kBlockTolerance);
  });
}

TEST_CASE("a row's MoE output does not depend on the other rows of its batch") {
  // Exact: each row is routed from its own scores (one sgemv per row,
  // linear.h) and runs its experts' matrix-vector products alone, so its
  // arithmetic is the same in any batch.
  rc::prop("batched == alone", [] {
    const ModelConfig c = draw_moe_config();
    const ModelWeights w = make_synthetic_weights(c, *rc::gen::arbitrary<uint64_t>());
    const auto x = draw_rows(c);
    const auto all = moe_ffn(x, w.layers[0], c);
    for (size_t r = 0; r < x.shape(0); ++r) {
      xt::xtensor<float, 2> one({1, x.shape(1)});
      std::copy(x.data() + r * x.shape(1), x.data() + (r + 1) * x.shape(1), one.data());
      const auto alone = moe_ffn(one, w.layers[0], c);
      RC_ASSERT(std::equal(alone.begin(), alone.end(), all.data() + r * all.shape(1)));
    }
  });
}

namespace {

// The smallest relative change of the block's output over 8 seeded models
// when `change` alters the config (and weights) of a fixed 8-expert top-2
// layer with a shared expert and a router bias.
template <class Change>
double smallest_effect(Change change) {
  ModelConfig c;
  c.dim = 24;
  c.hidden_dim = 8;
  c.n_layers = 1;
  c.n_heads = c.n_kv_heads = 1;
  c.explicit_head_dim = 2;
  c.vocab_size = c.max_seq_len = 4;
  c.options.moe = MoeModule::Mlp;
  c.options.shared_expert = c.options.router_bias = c.options.expert_biases = true;
  c.moe = {.n_experts = 8, .n_experts_used = 2, .expert_hidden_dim = 16, .shared_expert_hidden_dim = 12,
           .swiglu_limit = 7.0f};
  double smallest = INFINITY;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const ModelWeights on = make_synthetic_weights(c, seed);
    ModelWeights off = on;
    change(off);
    off.validate_shapes();
    const auto x = test::random_matrix(4, 24, seed, 1.5f);
    const auto a = moe_ffn(x, on.layers[0], on.config), b = moe_ffn(x, off.layers[0], off.config);
    smallest = std::min(smallest, test::relative_error(b, a));
  }
  return smallest;
}

}  // namespace

TEST_CASE("each MoE option moves the output far beyond the float64 comparison's tolerance") {
  // So a block that ignored one (renormalised when it should not, ran the
  // shared expert without its gate, ...) fails the float64 property.
  const auto check = [](double effect) {
    INFO("smallest relative change over 8 models: " << effect);
    CHECK(effect >= 100 * kBlockTolerance);
  };
  SECTION("renormalising the top-k weights") { check(smallest_effect([](ModelWeights& w) { w.config.moe.norm_topk_prob = true; })); }
  SECTION("top-k then softmax instead of softmax then top-k") {
    check(smallest_effect([](ModelWeights& w) { w.config.moe.routing = ExpertRouting::TopKSoftmax; }));
  }
  SECTION("the shared expert") {
    check(smallest_effect([](ModelWeights& w) {
      w.config.options.shared_expert = false;
      w.config.moe.shared_expert_hidden_dim = 0;
      auto& L = w.layers[0];
      L.shexp_gate_inp = L.shexp_gate = L.shexp_up = L.shexp_down = {};
    }));
  }
  SECTION("the shared expert's gate (an ungated shared expert)") {
    check(smallest_effect([](ModelWeights& w) {
      // A zero gate weight makes the gate 1/2 on every row, so the change is
      // the gate's row-dependent value against a constant: what a block that
      // dropped the sigmoid gate (a constant 1) gets wrong too.
      w.layers[0].shexp_gate_inp.fill(0.0f);
    }));
  }
  SECTION("the router bias") { check(smallest_effect([](ModelWeights& w) { w.layers[0].router_bias.fill(0.0f); })); }
  SECTION("the experts' biases, each") {
    check(smallest_effect([](ModelWeights& w) { w.layers[0].exp_gate_bias.fill(0.0f); }));
    check(smallest_effect([](ModelWeights& w) { w.layers[0].exp_up_bias.fill(0.0f); }));
    check(smallest_effect([](ModelWeights& w) { w.layers[0].exp_down_bias.fill(0.0f); }));
  }
  SECTION("the clamped activation against silu") {
    check(smallest_effect([](ModelWeights& w) { w.config.moe.swiglu_limit = 0.0f; }));
  }
  SECTION("the clamp's limit (7 against one that clamps often)") {
    check(smallest_effect([](ModelWeights& w) { w.config.moe.swiglu_limit = 0.05f; }));
  }
}
