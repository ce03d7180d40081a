// reference/attention.h against a float64 attention written here (sliding
// windows and sink logits included), GQA against multi-head attention with
// repeated K/V heads, and the window's edge: what lies before it changes
// nothing, its first position does.
#include <cmath>
#include <vector>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "reference/attention.h"
#include "reference/dense_kv_cache.h"
#include "tests/reference/random_tensors.h"

using namespace astrai;

namespace {

struct AttentionCase {
  ModelConfig config;
  std::vector<BatchToken> batch;  // rows of possibly several sequences
  xt::xtensor<float, 2> q;
  xt::xtensor<float, 2> keys, values;  // [n_seqs * max_len, kv_dim]: row s * max_len + p
  xt::xtensor<float, 1> sinks;         // [n_heads] or empty
};

// Adds a sliding window (on the case's one layer) and sink logits, each
// half the time: windows from 1 (only the query's own position) to past the
// context; sinks in [-4, 4], around the scores' range (q and k in [-2, 2]).
void draw_window_and_sinks(AttentionCase& c) {
  if (*rc::gen::arbitrary<bool>()) c.config.sliding_window = *rc::gen::inRange(1, c.config.max_seq_len + 8);
  if (*rc::gen::arbitrary<bool>()) {
    c.config.options.attention_sinks = true;
    const auto drawn = astrai::test::random_matrix(1, size_t(c.config.n_heads), *rc::gen::arbitrary<uint64_t>(), 4.0f);
    c.sinks = xt::xtensor<float, 1>::from_shape({size_t(c.config.n_heads)});
    for (size_t h = 0; h < c.sinks.size(); ++h) c.sinks(h) = drawn(0, h);
  }
}

AttentionCase draw_case() {
  AttentionCase c;
  const int head_dim = *rc::gen::element(2, 4, 8, 16, 64, 128);
  const int n_kv_heads = *rc::gen::inRange(1, 4);
  const int group = *rc::gen::element(1, 2, 3, 4, 8);
  c.config.n_kv_heads = n_kv_heads;
  c.config.n_heads = n_kv_heads * group;
  c.config.dim = c.config.n_heads * head_dim;
  c.config.n_layers = 1;
  c.config.max_seq_len = *rc::gen::inRange(1, 200);
  const int n_seqs = *rc::gen::inRange(1, 4);
  for (int s = 0; s < n_seqs; ++s) {
    const int rows = *rc::gen::inRange(1, 4);
    for (int r = 0; r < rows; ++r) c.batch.push_back({0, s, *rc::gen::inRange(0, c.config.max_seq_len), false});
  }
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  const size_t kv_rows = size_t(n_seqs * c.config.max_seq_len);
  c.q = astrai::test::random_matrix(c.batch.size(), size_t(c.config.q_dim()), seed, 2.0f);
  c.keys = astrai::test::random_matrix(kv_rows, size_t(c.config.kv_dim()), seed + 1, 2.0f);
  c.values = astrai::test::random_matrix(kv_rows, size_t(c.config.kv_dim()), seed + 2);
  return c;
}

void fill_cache(DenseKVCache& cache, const AttentionCase& c) {
  const int n_seqs = cache.n_slots();
  for (int s = 0; s < n_seqs; ++s)
    for (int p = 0; p < c.config.max_seq_len; ++p) {
      const size_t row = size_t(s * c.config.max_seq_len + p);
      cache.write(0, s, p, &c.keys(row, 0), &c.values(row, 0));
    }
}

xt::xtensor<double, 2> attention_f64(const AttentionCase& c) {
  const int d = c.config.head_dim(), group = c.config.n_heads / c.config.n_kv_heads;
  xt::xtensor<double, 2> out({c.batch.size(), size_t(c.config.q_dim())});
  for (size_t r = 0; r < c.batch.size(); ++r)
    for (int h = 0; h < c.config.n_heads; ++h) {
      const int g = h / group, s = c.batch[r].seq, p = c.batch[r].pos;
      // Positions p - W + 1 .. p with a window W (the last W), else 0 .. p.
      const int W = c.config.sliding_window, first = W > 0 && p - W + 1 > 0 ? p - W + 1 : 0;
      std::vector<double> w(size_t(p - first) + 1);
      double max = -INFINITY, sum = 0.0;
      for (int j = first; j <= p; ++j) {
        double dot = 0.0;
        for (int i = 0; i < d; ++i)
          dot += double(c.q(r, size_t(h * d + i))) * c.keys(size_t(s * c.config.max_seq_len + j), size_t(g * d + i));
        w[size_t(j - first)] = dot / std::sqrt(double(d));
        max = std::max(max, w[size_t(j - first)]);
      }
      const bool sink = c.sinks.size() > 0;
      if (sink) max = std::max(max, double(c.sinks(size_t(h))));
      for (auto& x : w) sum += (x = std::exp(x - max));
      if (sink) sum += std::exp(double(c.sinks(size_t(h))) - max);  // in the denominator, with no value
      for (int i = 0; i < d; ++i) {
        double acc = 0.0;
        for (int j = first; j <= p; ++j)
          acc += w[size_t(j - first)] / sum * c.values(size_t(s * c.config.max_seq_len + j), size_t(g * d + i));
        out(r, size_t(h * d + i)) = acc;
      }
    }
  return out;
}

int n_seqs_of(const AttentionCase& c) {
  int n = 0;
  for (const auto& t : c.batch) n = std::max(n, t.seq + 1);
  return n;
}

}  // namespace

TEST_CASE("causal attention matches float64 attention, with and without a window and sinks") {
  rc::prop("attention ~ float64", [] {
    auto c = draw_case();
    draw_window_and_sinks(c);
    DenseKVCache cache(c.config, n_seqs_of(c));
    fill_cache(cache, c);
    const auto out = causal_attention(c.q, c.batch, cache, 0, c.config, c.sinks);
    // Dot products of length <= 128 and a softmax-weighted sum over <= 200
    // positions in float32: normwise error ~1e-6; 1e-5 is the bound.
    RC_ASSERT(astrai::test::all_finite(out));
    RC_ASSERT(astrai::test::relative_error(out, attention_f64(c)) < 1e-5);
  });
}

TEST_CASE("grouped-query attention equals multi-head attention with K/V heads repeated") {
  rc::prop("GQA == MHA(repeat_kv)", [] {
    const auto c = draw_case();
    const int d = c.config.head_dim(), group = c.config.n_heads / c.config.n_kv_heads;
    AttentionCase mha = c;
    mha.config.n_kv_heads = c.config.n_heads;
    mha.keys = xt::xtensor<float, 2>({c.keys.shape(0), size_t(mha.config.kv_dim())});
    mha.values = mha.keys;
    for (size_t row = 0; row < c.keys.shape(0); ++row)
      for (int h = 0; h < c.config.n_heads; ++h)
        for (int i = 0; i < d; ++i) {
          mha.keys(row, size_t(h * d + i)) = c.keys(row, size_t((h / group) * d + i));
          mha.values(row, size_t(h * d + i)) = c.values(row, size_t((h / group) * d + i));
        }
    DenseKVCache gqa_cache(c.config, n_seqs_of(c)), mha_cache(mha.config, n_seqs_of(c));
    fill_cache(gqa_cache, c);
    fill_cache(mha_cache, mha);
    // Same numbers through the same arithmetic: bit-identical.
    RC_ASSERT(causal_attention(c.q, c.batch, gqa_cache, 0, c.config) ==
              causal_attention(mha.q, mha.batch, mha_cache, 0, mha.config));
  });
}

TEST_CASE("attention at position 0 returns the first value row") {
  const ModelConfig config{.dim = 8, .n_layers = 1, .n_heads = 2, .n_kv_heads = 1, .max_seq_len = 4};
  DenseKVCache cache(config, 1);
  const std::vector<float> k{1, 2, 3, 4}, v{5, 6, 7, 8};
  cache.write(0, 0, 0, k.data(), v.data());
  const auto q = astrai::test::random_matrix(1, 8, 1);
  const std::vector<BatchToken> batch{{0, 0, 0, false}};
  const auto out = causal_attention(q, batch, cache, 0, config);
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 4; ++i) CHECK(out(0, size_t(h * 4 + i)) == v[size_t(i)]);
}

TEST_CASE("a sliding window sees exactly its last positions") {
  rc::prop("keys before the window change nothing; the window's first key does", [] {
    auto c = draw_case();
    draw_window_and_sinks(c);
    const int W = *rc::gen::inRange(1, c.config.max_seq_len + 1);
    c.config.sliding_window = W;
    DenseKVCache cache(c.config, n_seqs_of(c));
    fill_cache(cache, c);
    const auto before = causal_attention(c.q, c.batch, cache, 0, c.config, c.sinks);
    // Overwrite the key and value of position p - W (just outside the first
    // row's window) and of p - W + 1 (the window's first) for the first row's
    // sequence with a key that dominates its softmax (10 q of each KV head's
    // first query head: a score of 10 |q|^2 / sqrt(d)) and values far from
    // the drawn ones.
    const BatchToken row = c.batch[0];
    const int d = c.config.head_dim(), group = c.config.n_heads / c.config.n_kv_heads;
    std::vector<float> key(size_t(c.config.kv_dim())), far(size_t(c.config.kv_dim()), 50.0f);
    for (int g = 0; g < c.config.n_kv_heads; ++g)
      for (int i = 0; i < d; ++i) key[size_t(g * d + i)] = 10.0f * c.q(0, size_t(g * group * d + i));
    if (row.pos - W >= 0) {
      cache.write(0, row.seq, row.pos - W, key.data(), far.data());
      const auto after = causal_attention(c.q, c.batch, cache, 0, c.config, c.sinks);
      // Rows of that sequence at positions above p have windows that may
      // include p - W; the first row's own output must not move, bit for bit.
      for (size_t i = 0; i < after.shape(1); ++i) RC_ASSERT(after(0, i) == before(0, i));
    }
    const int edge = std::max(0, row.pos - W + 1);
    cache.write(0, row.seq, edge, key.data(), far.data());
    const auto after = causal_attention(c.q, c.batch, cache, 0, c.config, c.sinks);
    bool moved = false;
    for (size_t i = 0; i < after.shape(1); ++i) moved = moved || after(0, i) != before(0, i);
    RC_ASSERT(moved);
  });
}

TEST_CASE("a window as long as the context, and a sink of -inf, change no bit") {
  rc::prop("window >= pos + 1 == full; sink -inf == none", [] {
    const auto c = draw_case();
    DenseKVCache cache(c.config, n_seqs_of(c));
    fill_cache(cache, c);
    const auto full = causal_attention(c.q, c.batch, cache, 0, c.config);
    // The windowed loop then starts at position 0 and does the same
    // operations in the same order; exp(-inf - m) adds an exact 0 to the sum.
    AttentionCase w = c;
    w.config.sliding_window = c.config.max_seq_len + *rc::gen::inRange(0, 3);
    RC_ASSERT(causal_attention(w.q, w.batch, cache, 0, w.config) == full);
    xt::xtensor<float, 1> no_sink = xt::xtensor<float, 1>::from_shape({size_t(c.config.n_heads)});
    no_sink.fill(-INFINITY);
    RC_ASSERT(causal_attention(c.q, c.batch, cache, 0, c.config, no_sink) == full);
  });
}

TEST_CASE("a sink logit shrinks the output by its share of the softmax") {
  // One position of value v: without a sink the output is v; with a sink s
  // and score t it is v e^t / (e^t + e^s). q = 0 makes t = 0.
  ModelConfig config{.dim = 4, .n_layers = 1, .n_heads = 1, .n_kv_heads = 1, .max_seq_len = 2};
  config.options.attention_sinks = true;
  DenseKVCache cache(config, 1);
  const std::vector<float> k{1, 2, 3, 4}, v{2, 4, 6, 8};
  cache.write(0, 0, 0, k.data(), v.data());
  const xt::xtensor<float, 2> q = xt::zeros<float>({1, 4});
  const xt::xtensor<float, 1> sinks = {std::log(3.0f)};  // e^s = 3: the position keeps 1/4
  const std::vector<BatchToken> batch{{0, 0, 0, false}};
  const auto out = causal_attention(q, batch, cache, 0, config, sinks);
  for (int i = 0; i < 4; ++i) CHECK(out(0, size_t(i)) == Approx(v[size_t(i)] / 4.0f).epsilon(1e-6));
}
