// Causal grouped-query attention over a KV cache.
#pragma once

#include <span>

#include <xtensor/xtensor.hpp>

#include "reference/batch.h"
#include "reference/kv_cache_view.h"
#include "reference/model_config.h"

namespace astrai {

// For each batch row (sequence s, position p) and each query head h, with its
// key/value head g = h / (n_heads / n_kv_heads):
//   score_j = q_h . k_{g,j} * config.attention_scale()    for j = first .. p
// (1 / sqrt(head_dim), or Gemma's 1 / sqrt(query_pre_attn_scalar))
//   p_j     = exp(score_j - m) / (sum_i exp(score_i - m) + exp(sink_h - m))
//   out_h   = sum_j p_j v_{g,j}
// where first = 0, or p - window + 1 (at least 0) when `layer` slides
// (config.window(layer): the last `window` positions), m is the largest of
// the scores and the sink, and the sink term is there only when `sinks` is
// not empty (gpt-oss: one learned logit per query head, which takes a share
// of the softmax and gives nothing back). q: [rows, n_heads * head_dim]
// after RoPE; K/V of positions first..p of s must be in `cache` for `layer`
// (the forward pass writes the batch's own rows first). Returns
// [rows, n_heads * head_dim].
xt::xtensor<float, 2> causal_attention(const xt::xtensor<float, 2>& q, std::span<const BatchToken> batch,
                                       const KVCacheView& cache, int layer, const ModelConfig& config,
                                       const xt::xtensor<float, 1>& sinks = {});

}  // namespace astrai
