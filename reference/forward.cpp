#include "reference/forward.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include "reference/attention.h"
#include "reference/geglu.h"
#include "reference/linear.h"
#include "reference/moe.h"
#include "reference/rmsnorm.h"
#include "reference/rope.h"
#include "reference/swiglu.h"

namespace astrai {
namespace {

// x[r] = token_embedding[batch[r].token], times sqrt(dim) in float with
// scaled_embedding (Gemma; llama.cpp's sqrtf(n_embd). transformers rounds
// the factor to the checkpoint's dtype first: bf16(sqrt(2560)) = 50.5 for
// 50.596, a difference within a bf16 model's own rounding).
xt::xtensor<float, 2> embed(const ModelWeights& w, std::span<const BatchToken> batch) {
  xt::xtensor<float, 2> x({batch.size(), size_t(w.config.dim)});
  for (size_t r = 0; r < batch.size(); ++r) xt::row(x, r) = xt::row(w.token_embedding, size_t(batch[r].token));
  if (w.config.options.scaled_embedding) x *= std::sqrt(float(w.config.dim));
  return x;
}

// The scale an RMSNorm multiplies by: its weight, or 1 + w (in float, as
// transformers' Gemma3RMSNorm) with norm_unit_offset.
xt::xtensor<float, 1> norm_scale(const xt::xtensor<float, 1>& w, const ModelConfig& c) {
  if (!c.options.norm_unit_offset) return w;
  return 1.0f + w;
}

xt::xtensor<float, 2> norm(const xt::xtensor<float, 2>& x, const xt::xtensor<float, 1>& w, const ModelConfig& c) {
  return rmsnorm(x, norm_scale(w, c), c.norm_eps);
}

// Stores every row's K (already rotated) and V at its sequence and position.
void write_kv(KVCacheView& cache, int layer, std::span<const BatchToken> batch, const xt::xtensor<float, 2>& k,
              const xt::xtensor<float, 2>& v) {
  for (size_t r = 0; r < batch.size(); ++r) cache.write(layer, batch[r].seq, batch[r].pos, &k(r, 0), &v(r, 0));
}

// y = x W^T + b; a model without biases has b empty (Qwen 2 / 2.5 add one to
// q, k and v). The bias is added after the product, row by row, in float.
xt::xtensor<float, 2> project(const xt::xtensor<float, 2>& x, const xt::xtensor<float, 2>& W,
                              const xt::xtensor<float, 1>& b) {
  xt::xtensor<float, 2> y = linear(x, W);
  if (b.size() > 0) y += b;  // broadcast over the rows
  return y;
}

// x += W_o attention(RoPE(N_q(W_q norm(x) + b_q)), RoPE(N_k(W_k norm(x) + b_k)), W_v norm(x) + b_v) + b_o
// where b_q, b_k, b_v are there only with qkv_bias (Qwen 2, gpt-oss), b_o with
// out_bias (gpt-oss), and N_q, N_k are the
// per-head RMSNorms of qk_norm (Qwen 3), else the identity. RoPE is the
// layer's (rope_frequencies(c, layer): its base and scaling, YaRN's
// attention factor as the rotation's magnitude); attention covers the
// layer's window and its sinks when the config has them.
// With sandwich_norms (Gemma 3) the block's output is RMSNormed by
// post_attn_norm before it is added.
void attention_block(xt::xtensor<float, 2>& x, const LayerWeights& L, int layer, std::span<const BatchToken> batch,
                     std::span<const int> positions, KVCacheView& cache, const ModelConfig& c) {
  const xt::xtensor<float, 2> h = norm(x, L.attn_norm, c);
  xt::xtensor<float, 2> q = project(h, L.wq, L.bq);
  xt::xtensor<float, 2> k = project(h, L.wk, L.bk);
  const xt::xtensor<float, 2> v = project(h, L.wv, L.bv);
  if (c.options.qk_norm) {
    q = rmsnorm_heads(q, norm_scale(L.q_norm, c), c.norm_eps);
    k = rmsnorm_heads(k, norm_scale(L.k_norm, c), c.norm_eps);
  }
  const std::vector<float> freqs = rope_frequencies(c, layer);
  const float magnitude = rope_attention_factor(layer_rope(c, layer).scaling);
  apply_rope(q, positions, freqs, c.rope_layout, magnitude);
  apply_rope(k, positions, freqs, c.rope_layout, magnitude);
  // K enters the cache already rotated: a cached key never needs its position again.
  write_kv(cache, layer, batch, k, v);
  const xt::xtensor<float, 2> out = project(causal_attention(q, batch, cache, layer, c, L.sinks), L.wo, L.bo);
  x += c.options.sandwich_norms ? norm(out, L.post_attn_norm, c) : out;
}

// x += FFN(norm(x)): a SwiGLU (Gemma: GeGLU) in dense layers, the experts
// in sparse ones (lowering each row's routing margin to its choice's there,
// when asked); with sandwich_norms the output is RMSNormed by post_ffn_norm.
void feed_forward_block(xt::xtensor<float, 2>& x, const LayerWeights& L, int layer, const ModelConfig& c,
                        std::vector<float>* margins) {
  const xt::xtensor<float, 2> h = norm(x, L.ffn_norm, c);
  if (!c.moe.sparse(layer)) {
    const xt::xtensor<float, 2> out = c.options.gelu_tanh ? geglu_ffn(h, L) : swiglu_ffn(h, L);
    x += c.options.sandwich_norms ? norm(out, L.post_ffn_norm, c) : out;
    return;
  }
  std::vector<ExpertChoice> choices;
  x += moe_ffn(h, L, c, &choices);
  if (margins)
    for (size_t r = 0; r < choices.size(); ++r) (*margins)[r] = std::min((*margins)[r], choices[r].margin);
}

// logits = classifier norm(x[r]) for the rows that asked for them; with a
// final soft cap c (Gemma), c tanh(logits / c) in float.
xt::xtensor<float, 2> logits_of_wanted_rows(const ModelWeights& w, const xt::xtensor<float, 2>& x,
                                            std::span<const BatchToken> batch) {
  std::vector<size_t> wanted;
  for (size_t r = 0; r < batch.size(); ++r)
    if (batch[r].want_logits) wanted.push_back(r);
  xt::xtensor<float, 2> rows({wanted.size(), size_t(w.config.dim)});
  for (size_t i = 0; i < wanted.size(); ++i) xt::row(rows, i) = xt::row(x, wanted[i]);
  xt::xtensor<float, 2> logits = linear(norm(rows, w.final_norm, w.config), w.classifier);
  if (const float cap = w.config.final_logit_softcap; cap > 0.0f)
    for (float& l : logits) l = cap * std::tanh(l / cap);
  return logits;
}

}  // namespace

xt::xtensor<float, 2> forward(const ModelWeights& weights, std::span<const BatchToken> batch, KVCacheView& cache,
                              std::vector<float>* routing_margins) {
  const ModelConfig& c = weights.config;
  check_batch(c, batch);
  std::vector<int> positions;
  for (const auto& t : batch) positions.push_back(t.pos);

  xt::xtensor<float, 2> x = embed(weights, batch);  // the residual stream, one row per token
  if (routing_margins) routing_margins->assign(batch.size(), std::numeric_limits<float>::infinity());
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& L = weights.layers[size_t(l)];
    attention_block(x, L, l, batch, positions, cache, c);
    feed_forward_block(x, L, l, c, routing_margins);
  }
  return logits_of_wanted_rows(weights, x, batch);
}

}  // namespace astrai
