// reference/attention.h against a float64 attention written here, and GQA
// against multi-head attention with repeated K/V heads.
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
};

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
      std::vector<double> w(size_t(p) + 1);
      double max = -INFINITY, sum = 0.0;
      for (int j = 0; j <= p; ++j) {
        double dot = 0.0;
        for (int i = 0; i < d; ++i)
          dot += double(c.q(r, size_t(h * d + i))) * c.keys(size_t(s * c.config.max_seq_len + j), size_t(g * d + i));
        w[size_t(j)] = dot / std::sqrt(double(d));
        max = std::max(max, w[size_t(j)]);
      }
      for (auto& x : w) sum += (x = std::exp(x - max));
      for (int i = 0; i < d; ++i) {
        double acc = 0.0;
        for (int j = 0; j <= p; ++j)
          acc += w[size_t(j)] / sum * c.values(size_t(s * c.config.max_seq_len + j), size_t(g * d + i));
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

TEST_CASE("causal attention matches float64 attention") {
  rc::prop("attention ~ float64", [] {
    const auto c = draw_case();
    DenseKVCache cache(c.config, n_seqs_of(c));
    fill_cache(cache, c);
    const auto out = causal_attention(c.q, c.batch, cache, 0, c.config);
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
