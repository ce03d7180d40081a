// Properties of reference/forward.h on synthetic models: decoding with the
// cache equals one forward over the whole sequence (what RoPE-before-cache-
// write guarantees), chunked prefill equals prefill at once, batching never
// changes a row, GQA equals MHA with repeated K/V heads, and the logits equal
// an independent float64 forward pass, for Llama-, Llama 3.1-, Qwen 2-,
// Qwen 3- and Mixture-of-Experts-shaped models (each option drawn, and each forced on in a property
// of its own), each option shown to move the logits far beyond that
// comparison's tolerance.
//
// The first three are exact, and each says why: they compare the same model
// on the same rows, and every row goes through the same BLAS calls with the
// same matrices whatever the batch (reference/linear.h: one sgemv per row), so
// the arithmetic is identical. The GQA property compares two different models,
// whose K/V projections are different BLAS problems ([kv_dim, dim] against
// [q_dim, dim] matrices); a BLAS may round a row differently with the matrix's
// height (OpenBLAS's AVX-512 sgemv does), so that one holds to a tolerance.
#include <cmath>
#include <functional>
#include <numbers>
#include <random>
#include <vector>

#include <catch2/catch.hpp>
#include <xtensor/xview.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "reference/synthetic_model.h"
#include "reference/dense_kv_cache.h"
#include "reference/forward.h"
#include "tests/reference/draw_moe.h"
#include "tests/reference/moe_f64.h"
#include "tests/reference/random_tensors.h"
#include "tests/reference/rope_f64.h"

using namespace astrai;

namespace {

// The options of today's architectures a drawn model must have; those not
// forced are drawn, on or off.
struct Forced {
  bool explicit_head_dim = false;  // Qwen 3: q_dim = n_heads * head_dim, independent of dim
  bool qkv_bias = false;           // Qwen 2
  bool qk_norm = false;            // Qwen 3
  bool rope_scaling = false;       // Llama 3.1
  bool moe = false;                // Mixture-of-Experts layers (Mixtral, Qwen MoE), dense ones mixed in
  bool sliding_window = false;     // Mistral, Gemma 3, gpt-oss: some or all layers attend over a window
  bool sinks = false;              // gpt-oss: a sink logit per query head
  bool out_bias = false;           // gpt-oss: the attention output projection's bias
  bool yarn = false;               // gpt-oss: YaRN RoPE scaling
  bool sliding_rope_theta = false; // Gemma 3: the sliding layers' own RoPE base (with a window)
  bool gemma = false;              // Gemma 3's block: (1 + w) norms, sandwich norms, GeGLU, scaled embedding,
                                   // query_pre_attn_scalar, final soft cap
};

// Experts in some layers: 1 to 6 of them, top-k, each routing rule, a shared
// expert and a router bias drawn, and dense layers by decoder_sparse_step and
// mlp_only_layers.
void draw_moe(ModelConfig& c) {
  astrai::test::draw_moe_options(c, 6, 32);
  c.moe.sparse_step = *rc::gen::inRange(1, 3);
  for (int l = 0; l < c.n_layers; ++l)
    if (*rc::gen::inRange(0, 4) == 0) c.moe.dense_layers.push_back(l);
}

// Llama 3.1's scaling (or linear, or YaRN) with an original context of a
// few positions, so that heads of 2 to 16 dimensions have pairs in all three
// bands within the drawn contexts (wavelengths 2 pi .. 2 pi 10000^(7/8)).
RopeScaling draw_scaling(bool yarn) {
  RopeScaling s;
  s.factor = *rc::gen::element(2.0f, 8.0f, 32.0f);
  s.low_freq_factor = *rc::gen::element(1.0f, 2.0f);
  s.high_freq_factor = s.low_freq_factor + *rc::gen::element(1.0f, 3.0f);
  s.original_context = *rc::gen::inRange(2, 65);
  s.kind = yarn ? RopeScalingKind::Yarn
                : *rc::gen::element(RopeScalingKind::Llama3, RopeScalingKind::Linear, RopeScalingKind::Yarn);
  if (s.kind == RopeScalingKind::Yarn) {
    // Turn counts for a few-position original context (transformers' 32 and
    // 1 would put every pair of a small head on one side of the ramp).
    s.beta_slow = *rc::gen::element(0.25f, 0.5f, 1.0f);
    s.beta_fast = s.beta_slow * *rc::gen::element(2.0f, 8.0f, 32.0f);
    s.truncate = *rc::gen::arbitrary<bool>();
    if (*rc::gen::arbitrary<bool>()) s.attention_factor = *rc::gen::element(0.5f, 1.25f, 2.0f);
  }
  return s;
}

// Sliding windows from 1 to the context on every layer (Mistral) or on a
// drawn subset (layer_types: Gemma 3, gpt-oss), with Gemma 3's own base for
// the sliding layers when forced or drawn.
void draw_window(ModelConfig& c, bool sliding_rope_theta) {
  c.sliding_window = *rc::gen::inRange(1, c.max_seq_len + 1);
  if (*rc::gen::arbitrary<bool>())
    c.sliding_layers = *rc::gen::container<std::vector<bool>>(size_t(c.n_layers), rc::gen::arbitrary<bool>());
  if (sliding_rope_theta || *rc::gen::arbitrary<bool>()) c.sliding_rope_theta = *rc::gen::element(10.0f, 100.0f, 1e6f);
}

// Gemma 3's block, each part drawn (all of them when forced), on a dense model.
void draw_gemma(ModelConfig& c, bool all) {
  c.moe = {};
  c.options.moe = MoeModule::None;
  c.options.shared_expert = c.options.router_bias = c.options.expert_biases = false;
  const auto on = [&] { return all || *rc::gen::arbitrary<bool>(); };
  c.options.norm_unit_offset = on();
  c.options.sandwich_norms = on();
  c.options.gelu_tanh = on();
  c.options.scaled_embedding = on();
  if (on()) c.query_pre_attn_scalar = *rc::gen::element(2.0f, 7.0f, 168.0f);
  if (on()) c.final_logit_softcap = *rc::gen::element(0.5f, 2.0f, 30.0f);
}

ModelConfig draw_config(Forced force = {}) {
  ModelConfig c;
  const int head_dim = *rc::gen::element(2, 4, 8, 16);
  c.n_kv_heads = *rc::gen::inRange(1, 3);
  c.n_heads = c.n_kv_heads * *rc::gen::element(1, 2, 4);
  if (force.explicit_head_dim || *rc::gen::arbitrary<bool>()) {
    c.explicit_head_dim = head_dim;
    c.dim = *rc::gen::inRange(1, 40);  // any width, odd ones too: q_dim = n_heads * head_dim is not dim
  } else {
    c.dim = c.n_heads * head_dim;
  }
  c.hidden_dim = *rc::gen::inRange(1, 64);
  c.n_layers = *rc::gen::inRange(1, 3);
  c.vocab_size = *rc::gen::inRange(2, 64);
  c.max_seq_len = *rc::gen::inRange(2, 40);
  c.rope_layout = *rc::gen::element(RopeLayout::AdjacentPairs, RopeLayout::RotateHalf);
  c.options.qkv_bias = force.qkv_bias || *rc::gen::arbitrary<bool>();
  c.options.qk_norm = force.qk_norm || *rc::gen::arbitrary<bool>();
  if (force.rope_scaling || force.yarn || *rc::gen::arbitrary<bool>()) c.rope_scaling = draw_scaling(force.yarn);
  if (force.moe || *rc::gen::arbitrary<bool>()) draw_moe(c);
  if (force.sliding_window || force.sliding_rope_theta || *rc::gen::arbitrary<bool>())
    draw_window(c, force.sliding_rope_theta);
  c.options.attention_sinks = force.sinks || *rc::gen::arbitrary<bool>();
  c.options.out_bias = force.out_bias || *rc::gen::arbitrary<bool>();
  if (force.gemma || (c.moe.n_experts == 0 && *rc::gen::arbitrary<bool>())) draw_gemma(c, force.gemma);
  return c;
}

std::vector<int> draw_tokens(const ModelConfig& c, int min_len) {
  const int n = *rc::gen::inRange(min_len, c.max_seq_len + 1);
  return *rc::gen::container<std::vector<int>>(size_t(n), rc::gen::inRange(0, c.vocab_size));
}

// Logits of every position of `tokens` (sequence `seq`) from one forward batch.
xt::xtensor<float, 2> forward_all(const ModelWeights& w, const std::vector<int>& tokens, KVCacheView& cache,
                                  int seq = 0, int start = 0) {
  std::vector<BatchToken> batch;
  for (size_t i = 0; i < tokens.size(); ++i) batch.push_back({tokens[i], seq, start + int(i), true});
  return forward(w, batch, cache);
}

}  // namespace

TEST_CASE("decoding token by token with the cache equals one forward over the sequence") {
  rc::prop("incremental == full", [] {
    const auto config = draw_config();
    const auto w = make_synthetic_weights(config, *rc::gen::arbitrary<uint64_t>());
    const auto tokens = draw_tokens(config, 1);
    DenseKVCache full_cache(config, 1), step_cache(config, 1);
    const auto full = forward_all(w, tokens, full_cache);
    for (size_t i = 0; i < tokens.size(); ++i) {
      const BatchToken t{tokens[i], 0, int(i), true};
      const auto step = forward(w, std::span<const BatchToken>(&t, 1), step_cache);
      // Exact: row i's projections are the same sgemv calls in both runs, and its
      // attention reads the same cached rows in the same order.
      RC_ASSERT(xt::row(step, 0) == xt::row(full, i));
    }
  });
}

TEST_CASE("prefill in chunks equals prefill at once") {
  rc::prop("chunked == at once", [] {
    const auto config = draw_config();
    const auto w = make_synthetic_weights(config, *rc::gen::arbitrary<uint64_t>());
    const auto tokens = draw_tokens(config, 2);
    const int cut = *rc::gen::inRange(1, int(tokens.size()));
    DenseKVCache once_cache(config, 1), chunk_cache(config, 1);
    const auto once = forward_all(w, tokens, once_cache);
    const std::vector<int> head(tokens.begin(), tokens.begin() + cut), tail(tokens.begin() + cut, tokens.end());
    const auto a = forward_all(w, head, chunk_cache);
    const auto b = forward_all(w, tail, chunk_cache, 0, cut);
    // Exact: the same per-row arithmetic; the tail reads the head's K/V from the cache
    // instead of from its own batch, and those rows hold the same bits.
    RC_ASSERT(a == xt::view(once, xt::range(0, cut), xt::all()));
    RC_ASSERT(b == xt::view(once, xt::range(cut, int(tokens.size())), xt::all()));
  });
}

TEST_CASE("a sequence's logits do not depend on the other sequences in its batch") {
  rc::prop("batched == alone", [] {
    const auto config = draw_config();
    const auto w = make_synthetic_weights(config, *rc::gen::arbitrary<uint64_t>());
    const auto a = draw_tokens(config, 1), b = draw_tokens(config, 1);
    DenseKVCache alone_cache(config, 1), both_cache(config, 2);
    const auto a_alone = forward_all(w, a, alone_cache);
    // Interleave the two prompts' rows in one batch.
    std::vector<BatchToken> batch;
    for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
      if (i < b.size()) batch.push_back({b[i], 1, int(i), true});
      if (i < a.size()) batch.push_back({a[i], 0, int(i), true});
    }
    const auto both = forward(w, batch, both_cache);
    size_t row = 0, a_row = 0;
    for (const auto& t : batch) {
      // Exact: a row never mixes with another sequence's rows (one sgemv per row,
      // attention over its own sequence only).
      if (t.seq == 0) RC_ASSERT(xt::row(both, row) == xt::row(a_alone, a_row++));
      ++row;
    }
  });
}

TEST_CASE("a GQA model equals the MHA model with K/V weights repeated per head") {
  // Not bit for bit: the GQA model projects K and V with a [kv_dim, dim] matrix
  // and the MHA model with a [q_dim, dim] one holding the same rows repeated.
  // A BLAS kernel may sum a row in another order depending on the matrix height
  // (OpenBLAS's AVX-512 sgemv does, OPENBLAS_CORETYPE=Haswell does not), so K
  // and V may differ in their last bit or two (relative ~1e-7, dot products of
  // at most 192 terms). Everything after them is the same arithmetic on nearly
  // the same numbers through at most three small layers. Measured with
  // OPENBLAS_CORETYPE=Cooperlake (the AVX-512 kernel): 1,976 of 40,000 cases
  // differ at all, the worst by 1.4e-6 normwise relative. 1e-5 leaves seven
  // times that, and a wrong head mapping (query head h reading kv head
  // h % n_kv instead of h / group) is off by O(1).
  // The attention-level property in test_attention.cpp is the exact one: there
  // both caches hold bit-identical K/V rows.
  rc::prop("GQA forward ~ MHA forward", [] {
    auto config = draw_config();
    const auto gqa = make_synthetic_weights(config, *rc::gen::arbitrary<uint64_t>());
    ModelWeights mha = gqa;
    mha.config.n_kv_heads = config.n_heads;
    const size_t d = size_t(config.head_dim()), group = size_t(config.n_heads / config.n_kv_heads);
    for (auto& L : mha.layers) {
      const auto wk = L.wk, wv = L.wv;
      const auto bk = L.bk, bv = L.bv;
      L.wk = xt::xtensor<float, 2>({size_t(config.q_dim()), size_t(config.dim)});
      L.wv = L.wk;
      if (config.options.qkv_bias) L.bk = L.bv = xt::xtensor<float, 1>::from_shape({size_t(config.q_dim())});
      for (size_t h = 0; h < size_t(config.n_heads); ++h)
        for (size_t i = 0; i < d; ++i) {
          xt::row(L.wk, h * d + i) = xt::row(wk, (h / group) * d + i);
          xt::row(L.wv, h * d + i) = xt::row(wv, (h / group) * d + i);
          if (config.options.qkv_bias) {
            L.bk(h * d + i) = bk((h / group) * d + i);
            L.bv(h * d + i) = bv((h / group) * d + i);
          }
        }
    }
    mha.validate_shapes();
    const auto tokens = draw_tokens(config, 1);
    DenseKVCache gqa_cache(gqa.config, 1), mha_cache(mha.config, 1);
    const auto got = forward_all(gqa, tokens, gqa_cache), want = forward_all(mha, tokens, mha_cache);
    RC_ASSERT(astrai::test::all_finite(got));
    RC_ASSERT(astrai::test::relative_error(got, want) <= 1e-5);
  });
}

TEST_CASE("forward rejects tokens and positions outside the model") {
  const ModelConfig config{.dim = 8, .hidden_dim = 16, .n_layers = 1, .n_heads = 2, .n_kv_heads = 1, .vocab_size = 10,
                           .max_seq_len = 4};
  const auto w = make_synthetic_weights(config, 1);
  DenseKVCache cache(config, 1);
  const std::vector<BatchToken> bad_token{{10, 0, 0, true}}, bad_pos{{1, 0, 4, true}}, negative{{-1, 0, 0, true}};
  CHECK_THROWS_WITH(forward(w, bad_token, cache), Catch::Contains("outside the vocabulary"));
  CHECK_THROWS_WITH(forward(w, bad_pos, cache), Catch::Contains("outside the context"));
  CHECK_THROWS_AS(forward(w, negative, cache), std::invalid_argument);
}

namespace {

// An independent float64 forward pass over a whole sequence, written from the
// formulas with no KV cache at all: every layer attends over the full [n, n]
// causal score matrix of rotated q and k. It shares no code with reference/
// (the RoPE frequencies come from tests/reference/rope_f64.h). The options,
// as transformers' modeling_llama / modeling_qwen2 / modeling_qwen3 apply them:
// q = h Wq^T (+ bq), k = h Wk^T (+ bk), v = h Wv^T (+ bv); then (qk_norm)
// RMSNorm of each head of q and k with q_norm / k_norm; then RoPE with the
// (Llama 3.1-scaled) frequencies; scores scaled by 1 / sqrt(head_dim).
using Matrix = std::vector<std::vector<double>>;

// Monte Carlo arithmetic (Parker 1997; what CADNA and Verificarlo automate):
// while a MonteCarloRounding is alive, every operation's result below is
// multiplied by (1 + r u) with r uniform in [-1, 1] and u four times
// float32's unit roundoff, as if rounded to a float32 of random error. Two
// such runs move the logits about as far as float32 arithmetic may rightly
// move them on this case; where that is a good part of the tolerance, the
// case is ill-conditioned at float32's precision (a sum that cancels before
// an RMSNorm scales it up, a near-zero head of q before its norm: drawn
// one-wide models failed at 1.1e-4 to 1.8e-4) and the comparison says
// nothing about the code, so the property discards it. A bug moves the
// logits by far more than rounding, and a perturbed run does not.
class MonteCarloRounding {
 public:
  explicit MonteCarloRounding(uint64_t seed) : rng_(seed) { active_ = this; }
  ~MonteCarloRounding() { active_ = nullptr; }
  MonteCarloRounding(const MonteCarloRounding&) = delete;
  MonteCarloRounding& operator=(const MonteCarloRounding&) = delete;

  static double round(double v) {
    if (!active_) return v;
    return v * (1.0 + 4.0 * 0x1p-24 * std::uniform_real_distribution<double>(-1.0, 1.0)(active_->rng_));
  }

 private:
  static inline MonteCarloRounding* active_ = nullptr;
  std::mt19937_64 rng_;
};
double rounded(double v) { return MonteCarloRounding::round(v); }

Matrix matmul_t(const Matrix& x, const xt::xtensor<float, 2>& W) {  // x W^T
  Matrix y(x.size(), std::vector<double>(W.shape(0)));
  for (size_t r = 0; r < x.size(); ++r)
    for (size_t o = 0; o < W.shape(0); ++o)
      for (size_t i = 0; i < W.shape(1); ++i) y[r][o] = rounded(y[r][o] + rounded(x[r][i] * double(W(o, i))));
  return y;
}

Matrix add_bias(Matrix y, const xt::xtensor<float, 1>& b) {
  if (b.size() == 0) return y;
  for (auto& row : y)
    for (size_t o = 0; o < row.size(); ++o) row[o] = rounded(row[o] + double(b(o)));
  return y;
}

// RMSNorm scaling by w, or by 1 + w (offset 1: Gemma's norms).
Matrix rms_norm(const Matrix& x, const xt::xtensor<float, 1>& w, double eps, double offset = 0.0) {
  Matrix y = x;
  for (auto& row : y) {
    double ms = 0.0;
    for (double v : row) ms = rounded(ms + v * v);
    const double inv = rounded(1.0 / std::sqrt(ms / double(row.size()) + eps));
    for (size_t i = 0; i < row.size(); ++i) row[i] = rounded(row[i] * inv * (offset + double(w(i))));
  }
  return y;
}

// RMSNorm of every head_dim-wide slice of every row, with the shared weight w.
void norm_heads(Matrix& x, const xt::xtensor<float, 1>& w, double eps, double offset) {
  const size_t d = w.size();
  for (auto& row : x)
    for (size_t h = 0; h < row.size() / d; ++h) {
      double ms = 0.0;
      for (size_t i = 0; i < d; ++i) ms = rounded(ms + row[h * d + i] * row[h * d + i]);
      const double inv = rounded(1.0 / std::sqrt(ms / double(d) + eps));
      for (size_t i = 0; i < d; ++i) row[h * d + i] = rounded(row[h * d + i] * inv * (offset + double(w(i))));
    }
}

// RoPE as layer `layer` applies it: Gemma 3's sliding layers with their own
// base and no scaling, the others with rope_theta and its scaling; cos and
// sin times YaRN's attention factor.
void rotate(Matrix& x, const ModelConfig& c, int layer) {
  const size_t d = size_t(c.head_dim());
  const bool own_base = c.sliding_rope_theta > 0.0f && c.sliding_window > 0 &&
                        (c.sliding_layers.empty() || c.sliding_layers[size_t(layer)]);
  const double theta = own_base ? c.sliding_rope_theta : c.rope_theta;
  const RopeScaling scaling = own_base ? RopeScaling{} : c.rope_scaling;
  const double m = astrai::test::rope_magnitude_f64(scaling);
  for (size_t pos = 0; pos < x.size(); ++pos)
    for (size_t h = 0; h < x[pos].size() / d; ++h)
      for (size_t i = 0; i < d / 2; ++i) {
        const bool adjacent = c.rope_layout == RopeLayout::AdjacentPairs;
        double& a = x[pos][h * d + (adjacent ? 2 * i : i)];
        double& b = x[pos][h * d + (adjacent ? 2 * i + 1 : i + d / 2)];
        const double angle = double(pos) * astrai::test::rope_frequency_f64(int(i), int(d), theta, scaling);
        const double a0 = a, b0 = b;
        a = rounded(m * (a0 * std::cos(angle) - b0 * std::sin(angle)));
        b = rounded(m * (a0 * std::sin(angle) + b0 * std::cos(angle)));
      }
}

// `ambiguous` (when given) is set when a sparse layer met a near-tie between
// the k-th and (k+1)-th experts (moe_f64.h), where float32 may rightly choose
// the other one.
Matrix forward_f64(const ModelWeights& w, const std::vector<int>& tokens, bool* ambiguous = nullptr) {
  const ModelConfig& c = w.config;
  const auto residual_add = [&](Matrix& x, const Matrix& delta) {
    for (size_t t = 0; t < x.size(); ++t)
      for (size_t i = 0; i < x[t].size(); ++i) x[t][i] = rounded(x[t][i] + delta[t][i]);
  };
  const size_t n = tokens.size(), d = size_t(c.head_dim()), group = size_t(c.n_heads / c.n_kv_heads);
  Matrix x(n);
  // Gemma 3 (transformers' Gemma3 modules): norms scale by 1 + w, the
  // embedding by sqrt(dim), scores by 1 / sqrt(query_pre_attn_scalar), the
  // attention and FFN outputs RMSNormed before their adds, GeGLU, soft cap.
  const double offset = c.options.norm_unit_offset ? 1.0 : 0.0;
  const double embed_scale = c.options.scaled_embedding ? std::sqrt(double(c.dim)) : 1.0;
  const double score_scale =
      1.0 / std::sqrt(c.query_pre_attn_scalar > 0.0f ? double(c.query_pre_attn_scalar) : double(c.head_dim()));
  for (size_t t = 0; t < n; ++t)
    for (size_t i = 0; i < size_t(c.dim); ++i)
      x[t].push_back(rounded(embed_scale * w.token_embedding(size_t(tokens[t]), i)));
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const LayerWeights& L = w.layers[l];
    const Matrix h = rms_norm(x, L.attn_norm, c.norm_eps, offset);
    Matrix q = add_bias(matmul_t(h, L.wq), L.bq), k = add_bias(matmul_t(h, L.wk), L.bk);
    const Matrix v = add_bias(matmul_t(h, L.wv), L.bv);
    if (c.options.qk_norm) {
      norm_heads(q, L.q_norm, c.norm_eps, offset);
      norm_heads(k, L.k_norm, c.norm_eps, offset);
    }
    rotate(q, c, int(l));
    rotate(k, c, int(l));
    // A sliding layer's query t sees keys j with t - j < window.
    const bool slides = c.sliding_window > 0 && (c.sliding_layers.empty() || c.sliding_layers[l]);
    Matrix att(n, std::vector<double>(size_t(c.q_dim())));
    for (size_t t = 0; t < n; ++t)
      for (size_t head = 0; head < size_t(c.n_heads); ++head) {
        const size_t g = head / group;
        std::vector<double> p(t + 1);
        std::vector<bool> seen(t + 1);
        double max = -1e300, sum = 0.0;
        for (size_t j = 0; j <= t; ++j) {
          seen[j] = !slides || t - j < size_t(c.sliding_window);
          if (!seen[j]) continue;
          for (size_t i = 0; i < d; ++i) p[j] = rounded(p[j] + q[t][head * d + i] * k[j][g * d + i]);
          p[j] = rounded(p[j] * score_scale);
          max = std::max(max, p[j]);
        }
        const bool sink = c.options.attention_sinks;
        if (sink) max = std::max(max, double(L.sinks(head)));
        for (size_t j = 0; j <= t; ++j) sum += seen[j] ? (p[j] = rounded(std::exp(p[j] - max))) : 0.0;
        if (sink) sum += rounded(std::exp(double(L.sinks(head)) - max));  // the sink's share, with no value
        for (size_t j = 0; j <= t; ++j)
          if (seen[j])
            for (size_t i = 0; i < d; ++i)
              att[t][head * d + i] = rounded(att[t][head * d + i] + rounded(p[j] / sum) * v[j][g * d + i]);
      }
    // An output into the residual stream; Gemma's sandwich norms RMSNorm it first.
    const auto add_output = [&](const Matrix& y, const xt::xtensor<float, 1>& post_norm) {
      residual_add(x, c.options.sandwich_norms ? rms_norm(y, post_norm, c.norm_eps, offset) : y);
    };
    add_output(add_bias(matmul_t(att, L.wo), L.bo), L.post_attn_norm);
    const Matrix h2 = rms_norm(x, L.ffn_norm, c.norm_eps, offset);
    if (c.moe.sparse(int(l))) {
      Matrix out(n);
      for (size_t t = 0; t < n; ++t) {
        auto moe = astrai::test::moe_f64(h2[t], L, c.moe);
        if (ambiguous && moe.ambiguous) *ambiguous = true;
        out[t] = std::move(moe.out);
        // moe_f64 rounds nothing itself: an error of the size float32's sums
        // of its terms have (moe.rss), as the rounding in its sums would give.
        for (size_t i = 0; i < out[t].size(); ++i) out[t][i] += rounded(moe.rss[i]) - moe.rss[i];
      }
      residual_add(x, out);
      continue;
    }
    Matrix gate = matmul_t(h2, L.w_gate);
    const Matrix up = matmul_t(h2, L.w_up);
    for (size_t t = 0; t < n; ++t)
      for (size_t i = 0; i < gate[t].size(); ++i) {
        const double g = gate[t][i];
        const double act = c.options.gelu_tanh
                               ? 0.5 * g * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (g + 0.044715 * g * g * g)))
                               : g / (1.0 + std::exp(-g));
        gate[t][i] = rounded(rounded(act) * up[t][i]);
      }
    add_output(matmul_t(gate, L.w_down), L.post_ffn_norm);
  }
  Matrix logits = matmul_t(rms_norm(x, w.final_norm, c.norm_eps, offset), w.classifier);
  if (c.final_logit_softcap > 0.0f)
    for (auto& row : logits)
      for (double& v : row) v = rounded(c.final_logit_softcap * std::tanh(v / c.final_logit_softcap));
  return logits;
}

// Normwise relative difference of two logit matrices of the same shape.
double normwise_difference(const Matrix& got, const Matrix& want) {
  double diff = 0.0, norm = 0.0;
  for (size_t r = 0; r < want.size(); ++r)
    for (size_t i = 0; i < want[r].size(); ++i) {
      diff += (got[r][i] - want[r][i]) * (got[r][i] - want[r][i]);
      norm += want[r][i] * want[r][i];
    }
  return std::sqrt(diff / norm);
}

}  // namespace

namespace {

// Normwise relative error of the reference's logits, decoded token by token,
// against forward_f64 over the whole sequence.
double error_against_f64(const ModelWeights& w, const std::vector<int>& tokens, bool* ambiguous = nullptr) {
  DenseKVCache cache(w.config, 1);
  std::vector<float> got;
  for (size_t i = 0; i < tokens.size(); ++i) {  // token by token, as decoding runs
    const BatchToken t{tokens[i], 0, int(i), true};
    const auto row = forward(w, std::span<const BatchToken>(&t, 1), cache);
    got.insert(got.end(), row.begin(), row.end());
  }
  const Matrix want = forward_f64(w, tokens, ambiguous);
  double diff = 0.0, norm = 0.0;
  size_t k = 0;
  for (const auto& row : want)
    for (double x : row) {
      if (!std::isfinite(got[k])) return INFINITY;  // NaN never passes
      diff += (got[k] - x) * (got[k] - x);
      norm += x * x;
      ++k;
    }
  return std::sqrt(diff / norm);
}

// float32 through a few small layers (positions < 40, widths < 64): normwise
// relative error ~1e-6; 1e-4 leaves room for the float32 RoPE angles (and the
// float32 Llama 3.1 frequencies: their error, at most twice that of the
// unscaled float frequency, 6e-7 relative, times positions < 40, is < 5e-5 rad).
// Biases add one rounding per element. Cases where rounding alone may move
// the logits by a quarter of this (rounding_spread: a sum that cancels
// before an RMSNorm scales it up) are ill-conditioned at float32's precision
// and discarded, about 1 in 700 drawn.
constexpr double kF64Tolerance = 1e-4;

// How far float32's rounding may rightly move the logits on this case: the
// larger normwise difference of two Monte Carlo rounded runs
// (MonteCarloRounding) from the exact one.
double rounding_spread(const ModelWeights& w, const std::vector<int>& tokens) {
  const Matrix exact = forward_f64(w, tokens);
  double spread = 0.0;
  for (uint64_t seed : {1, 2}) {
    const MonteCarloRounding rounding(seed);
    spread = std::max(spread, normwise_difference(forward_f64(w, tokens), exact));
  }
  return spread;
}

void check_against_f64(Forced force) {
  const auto config = draw_config(force);
  const auto w = make_synthetic_weights(config, *rc::gen::arbitrary<uint64_t>());
  const auto tokens = draw_tokens(config, 1);
  RC_LOG() << config.describe() << "\n";  // printed for a failing case only
  bool ambiguous = false;
  const double error = error_against_f64(w, tokens, &ambiguous);
  RC_PRE(!ambiguous);  // a near-tie between two experts (either is right: moe_f64.h)
  RC_PRE(rounding_spread(w, tokens) <= kF64Tolerance / 4);  // ill-conditioned at float32's precision
  RC_ASSERT(error <= kF64Tolerance);
}

}  // namespace

TEST_CASE("the forward pass matches a float64 full-sequence forward pass without a KV cache") {
  // Decoding through the cache must compute what full causal attention over
  // rotated q and k computes: this fails if K went into the cache unrotated,
  // if a position were off by one, or if the mask let a token see the future.
  // Every option is drawn on or off.
  rc::prop("reference logits ~ float64 logits", [] { check_against_f64({}); });
}

TEST_CASE("each of today's options matches the float64 forward pass when on") {
  rc::prop("explicit head_dim (q_dim != dim, Qwen 3)", [] { check_against_f64({.explicit_head_dim = true}); });
  rc::prop("q/k/v biases (Qwen 2)", [] { check_against_f64({.qkv_bias = true}); });
  rc::prop("per-head q/k RMSNorm (Qwen 3)", [] { check_against_f64({.qk_norm = true}); });
  rc::prop("Llama 3.1 RoPE scaling", [] { check_against_f64({.rope_scaling = true}); });
  rc::prop("Mixture-of-Experts layers (Mixtral, Qwen MoE; dense layers mixed in)", [] { check_against_f64({.moe = true}); });
  rc::prop("sliding windows on all or some layers (Mistral, Gemma 3)", [] { check_against_f64({.sliding_window = true}); });
  rc::prop("attention sinks (gpt-oss)", [] { check_against_f64({.sinks = true}); });
  rc::prop("YaRN RoPE scaling (gpt-oss)", [] { check_against_f64({.yarn = true}); });
  rc::prop("the attention output's bias (gpt-oss)", [] { check_against_f64({.out_bias = true}); });
  rc::prop("gpt-oss's shape: q/k/v/o biases, experts (biased, clamped), sinks, YaRN, windows", [] {
    check_against_f64({.qkv_bias = true, .moe = true, .sliding_window = true, .sinks = true, .out_bias = true,
                       .yarn = true});
  });
  rc::prop("a RoPE base of their own for the sliding layers (Gemma 3)", [] {
    check_against_f64({.sliding_rope_theta = true});
  });
  rc::prop("Gemma 3's block: (1 + w) norms, sandwich norms, GeGLU, scaled embedding, query scale, soft cap", [] {
    check_against_f64({.qk_norm = true, .sliding_window = true, .sliding_rope_theta = true, .gemma = true});
  });
  rc::prop("Qwen 3 shape: explicit head_dim and q/k norms", [] {
    check_against_f64({.explicit_head_dim = true, .qk_norm = true});
  });
}

namespace {

// Fixed small models of each architecture's shape (odd widths, GQA 2:1) and a
// prompt of distinct tokens: with equal tokens every position's V rows would be
// equal and attention (so RoPE) could not change anything.
ModelConfig arch_config() {
  ModelConfig c;
  c.dim = 24;
  c.hidden_dim = 40;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.vocab_size = 48;
  c.max_seq_len = 32;
  c.rope_layout = RopeLayout::RotateHalf;
  return c;
}

const std::vector<int> kDistinctTokens = {1, 7, 30, 2, 45, 11, 19, 3, 28, 40, 5, 33, 21, 9, 14, 37};

double relative_difference(const xt::xtensor<float, 2>& a, const xt::xtensor<float, 2>& b) {
  return astrai::test::relative_error(a, b);
}

xt::xtensor<float, 2> logits_of(const ModelWeights& w) {
  DenseKVCache cache(w.config, 1);
  return forward_all(w, kDistinctTokens, cache);
}

// The option off and on must differ by far more than kF64Tolerance, so that a
// forward pass ignoring it fails the float64 comparison. Minimum over 8 seeds.
template <class TurnOff>
double smallest_effect(const ModelConfig& config, TurnOff turn_off) {
  double smallest = INFINITY;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const ModelWeights on = make_synthetic_weights(config, seed);
    ModelWeights off = on;
    turn_off(off);
    off.validate_shapes();
    smallest = std::min(smallest, relative_difference(logits_of(on), logits_of(off)));
    // And the option-on model passes the float64 comparison itself.
    CHECK(error_against_f64(on, kDistinctTokens) <= kF64Tolerance);
  }
  return smallest;
}

}  // namespace

TEST_CASE("each option changes the logits far beyond the float64 comparison's tolerance") {
  SECTION("q/k/v biases (Qwen 2)") {
    ModelConfig c = arch_config();
    c.options.qkv_bias = true;
    const double effect = smallest_effect(c, [](ModelWeights& w) {
      w.config.options.qkv_bias = false;
      for (auto& L : w.layers) L.bq = L.bk = L.bv = {};
    });
    INFO("smallest relative change over 8 models: " << effect);
    CHECK(effect >= 100 * kF64Tolerance);
  }
  SECTION("per-head q/k RMSNorm (Qwen 3, explicit head_dim: q_dim 32 != dim 24)") {
    ModelConfig c = arch_config();
    c.explicit_head_dim = 8;
    c.options.qk_norm = true;
    const double effect = smallest_effect(c, [](ModelWeights& w) {
      w.config.options.qk_norm = false;
      for (auto& L : w.layers) L.q_norm = L.k_norm = {};
    });
    INFO("smallest relative change over 8 models: " << effect);
    CHECK(effect >= 100 * kF64Tolerance);
  }
  SECTION("Llama 3.1 RoPE scaling") {
    // head_dim 6: wavelengths 2 pi, 2 pi 10000^(1/3), 2 pi 10000^(2/3), i.e.
    // 6.3, 135 and 2916; original context 256 with factors 1 and 4 keeps the
    // first (< 64), blends the second (64 .. 256) and slows the third by 8.
    ModelConfig c = arch_config();
    c.rope_scaling = {8.0f, 1.0f, 4.0f, 256};
    const double effect = smallest_effect(c, [](ModelWeights& w) { w.config.rope_scaling = {}; });
    INFO("smallest relative change over 8 models: " << effect);
    CHECK(effect >= 100 * kF64Tolerance);
  }
  SECTION("a sliding window of 4 (Mistral), over 16 tokens") {
    ModelConfig c = arch_config();
    c.sliding_window = 4;
    const double effect = smallest_effect(c, [](ModelWeights& w) { w.config.sliding_window = 0; });
    INFO("smallest relative change over 8 models: " << effect);
    CHECK(effect >= 100 * kF64Tolerance);
  }
  SECTION("attention sinks (gpt-oss)") {
    ModelConfig c = arch_config();
    c.options.attention_sinks = true;
    const double effect = smallest_effect(c, [](ModelWeights& w) {
      w.config.options.attention_sinks = false;
      for (auto& L : w.layers) L.sinks = {};
    });
    INFO("smallest relative change over 8 models: " << effect);
    CHECK(effect >= 100 * kF64Tolerance);
  }
  SECTION("the attention output's bias (gpt-oss)") {
    ModelConfig c = arch_config();
    c.options.out_bias = true;
    const double effect = smallest_effect(c, [](ModelWeights& w) {
      w.config.options.out_bias = false;
      for (auto& L : w.layers) L.bo = {};
    });
    INFO("smallest relative change over 8 models: " << effect);
    CHECK(effect >= 100 * kF64Tolerance);
  }
  SECTION("YaRN RoPE scaling (gpt-oss's rule: factor 32, betas 32 and 1, no truncation), and its attention factor") {
    // head_dim 6 at theta 10000: pairs turn L / (2 pi), L / (2 pi 21.5) and
    // L / (2 pi 464) times in L = 4096 positions (652, 30, 1.4): the first
    // kept, the last two interpolated (and scaled by 0.1 ln 32 + 1 = 1.35).
    ModelConfig c = arch_config();
    c.rope_scaling = RopeScaling{.factor = 32.0f, .original_context = 4096, .kind = RopeScalingKind::Yarn,
                                 .truncate = false};
    const double effect = smallest_effect(c, [](ModelWeights& w) { w.config.rope_scaling = {}; });
    INFO("smallest relative change over 8 models: " << effect);
    CHECK(effect >= 100 * kF64Tolerance);
    ModelConfig unit = c;  // the attention factor alone moves the logits too
    unit.rope_scaling.attention_factor = 1.0f;
    const double factor_effect = smallest_effect(c, [&](ModelWeights& w) { w.config = unit; });
    INFO("the attention factor's smallest relative change: " << factor_effect);
    CHECK(factor_effect >= 100 * kF64Tolerance);
  }
  SECTION("Gemma 3's own RoPE base on the sliding layers") {
    ModelConfig c = arch_config();
    c.sliding_window = 20;  // longer than the prompt: only the base differs
    c.sliding_layers = {true, false};
    c.sliding_rope_theta = 100.0f;
    const double effect = smallest_effect(c, [](ModelWeights& w) { w.config.sliding_rope_theta = 0.0f; });
    INFO("smallest relative change over 8 models: " << effect);
    CHECK(effect >= 100 * kF64Tolerance);
  }
}

TEST_CASE("each part of Gemma 3's block changes the logits far beyond the float64 comparison's tolerance") {
  ModelConfig gemma = arch_config();
  gemma.explicit_head_dim = 8;
  gemma.options.qk_norm = true;
  gemma.options.norm_unit_offset = gemma.options.sandwich_norms = true;
  gemma.options.gelu_tanh = gemma.options.scaled_embedding = true;
  gemma.query_pre_attn_scalar = 32.0f;  // scores 1/2 of 1 / sqrt(8)'s
  gemma.final_logit_softcap = 1.0f;     // the synthetic logits' own size: the cap bends them
  const std::vector<std::pair<const char*, std::function<void(ModelWeights&)>>> parts = {
      {"(1 + w) norms", [](ModelWeights& w) { w.config.options.norm_unit_offset = false; }},
      {"sandwich norms",
       [](ModelWeights& w) {
         w.config.options.sandwich_norms = false;
         for (auto& L : w.layers) L.post_attn_norm = L.post_ffn_norm = {};
       }},
      {"GeGLU", [](ModelWeights& w) { w.config.options.gelu_tanh = false; }},
      {"scaled embedding", [](ModelWeights& w) { w.config.options.scaled_embedding = false; }},
      {"query_pre_attn_scalar", [](ModelWeights& w) { w.config.query_pre_attn_scalar = 0.0f; }},
      {"final soft cap", [](ModelWeights& w) { w.config.final_logit_softcap = 0.0f; }},
  };
  for (const auto& [name, turn_off] : parts) {
    const double effect = smallest_effect(gemma, turn_off);
    INFO(name << ": smallest relative change over 8 models: " << effect);
    CHECK(effect >= 100 * kF64Tolerance);
  }
}

TEST_CASE("a token further back than every layer's window reaches changes nothing; a full layer sees it") {
  // Two sliding layers of window W: position p sees p - W + 1 .. p in layer
  // 0, and through it p - 2 (W - 1) .. p in layer 1. Change the first token
  // of a prompt of 2 (W - 1) + 2 tokens: the last position's logits must keep
  // every bit (no operation of theirs reads it), the next-to-last's too, and
  // with layer 1 full (Gemma 3's mix) they must move.
  rc::prop("needle past the windows", [] {
    ModelConfig c = arch_config();
    c.sliding_window = *rc::gen::inRange(1, 8);
    c.max_seq_len = 2 * (c.sliding_window - 1) + 2;
    const auto w = make_synthetic_weights(c, *rc::gen::arbitrary<uint64_t>());
    auto tokens = *rc::gen::container<std::vector<int>>(size_t(c.max_seq_len), rc::gen::inRange(0, c.vocab_size));
    auto changed = tokens;
    changed[0] = (tokens[0] + *rc::gen::inRange(1, c.vocab_size)) % c.vocab_size;
    const auto logits = [](const ModelWeights& m, const std::vector<int>& t) {
      DenseKVCache cache(m.config, 1);
      return forward_all(m, t, cache);
    };
    const auto a = logits(w, tokens), b = logits(w, changed);
    const size_t last = tokens.size() - 1;
    RC_ASSERT(xt::view(a, last) == xt::view(b, last));
    ModelWeights mixed = w;
    mixed.config.sliding_layers = {true, false};
    const auto ma = logits(mixed, tokens), mb = logits(mixed, changed);
    RC_ASSERT(xt::view(ma, last) != xt::view(mb, last));
  });
}
