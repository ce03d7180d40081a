#include "reference/forward.h"

#include <stdexcept>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include "reference/attention.h"
#include "reference/linear.h"
#include "reference/rmsnorm.h"
#include "reference/rope.h"
#include "reference/swiglu.h"

namespace astrai {
namespace {

// x[r] = token_embedding[batch[r].token]
xt::xtensor<float, 2> embed(const ModelWeights& w, std::span<const BatchToken> batch) {
  xt::xtensor<float, 2> x({batch.size(), size_t(w.config.dim)});
  for (size_t r = 0; r < batch.size(); ++r) xt::row(x, r) = xt::row(w.token_embedding, size_t(batch[r].token));
  return x;
}

// Stores every row's K (already rotated) and V at its sequence and position.
void write_kv(KVCacheView& cache, int layer, std::span<const BatchToken> batch, const xt::xtensor<float, 2>& k,
              const xt::xtensor<float, 2>& v) {
  for (size_t r = 0; r < batch.size(); ++r) cache.write(layer, batch[r].seq, batch[r].pos, &k(r, 0), &v(r, 0));
}

// x += W_o attention(RoPE(W_q norm(x)), RoPE(W_k norm(x)), W_v norm(x))
void attention_block(xt::xtensor<float, 2>& x, const LayerWeights& L, int layer, std::span<const BatchToken> batch,
                     std::span<const int> positions, KVCacheView& cache, const ModelConfig& c) {
  const xt::xtensor<float, 2> h = rmsnorm(x, L.attn_norm, c.norm_eps);
  xt::xtensor<float, 2> q = linear(h, L.wq);
  xt::xtensor<float, 2> k = linear(h, L.wk);
  const xt::xtensor<float, 2> v = linear(h, L.wv);
  apply_rope(q, positions, c.head_dim(), c.rope_theta, c.rope_layout);
  apply_rope(k, positions, c.head_dim(), c.rope_theta, c.rope_layout);
  // K enters the cache already rotated: a cached key never needs its position again.
  write_kv(cache, layer, batch, k, v);
  x += linear(causal_attention(q, batch, cache, layer, c), L.wo);
}

// x += FFN(norm(x))
void feed_forward_block(xt::xtensor<float, 2>& x, const LayerWeights& L, const ModelConfig& c) {
  x += swiglu_ffn(rmsnorm(x, L.ffn_norm, c.norm_eps), L);
}

// logits = classifier norm(x[r]) for the rows that asked for them.
xt::xtensor<float, 2> logits_of_wanted_rows(const ModelWeights& w, const xt::xtensor<float, 2>& x,
                                            std::span<const BatchToken> batch) {
  std::vector<size_t> wanted;
  for (size_t r = 0; r < batch.size(); ++r)
    if (batch[r].want_logits) wanted.push_back(r);
  xt::xtensor<float, 2> rows({wanted.size(), size_t(w.config.dim)});
  for (size_t i = 0; i < wanted.size(); ++i) xt::row(rows, i) = xt::row(x, wanted[i]);
  return linear(rmsnorm(rows, w.final_norm, w.config.norm_eps), w.classifier);
}

}  // namespace

xt::xtensor<float, 2> forward(const ModelWeights& weights, std::span<const BatchToken> batch, KVCacheView& cache) {
  const ModelConfig& c = weights.config;
  check_batch(c, batch);
  std::vector<int> positions;
  for (const auto& t : batch) positions.push_back(t.pos);

  xt::xtensor<float, 2> x = embed(weights, batch);  // the residual stream, one row per token
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& L = weights.layers[size_t(l)];
    attention_block(x, L, l, batch, positions, cache, c);
    feed_forward_block(x, L, c);
  }
  return logits_of_wanted_rows(weights, x, batch);
}

}  // namespace astrai
