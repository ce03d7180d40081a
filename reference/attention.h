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
//   score_j = q_h . k_{g,j} / sqrt(head_dim)              for j = 0 .. p
//   out_h   = sum_j softmax(score)_j v_{g,j}
// q: [rows, n_heads * head_dim] after RoPE; K/V of positions 0..p of s must be
// in `cache` for `layer` (the forward pass writes the batch's own rows first).
// Returns [rows, n_heads * head_dim].
xt::xtensor<float, 2> causal_attention(const xt::xtensor<float, 2>& q, std::span<const BatchToken> batch,
                                       const KVCacheView& cache, int layer, const ModelConfig& config);

}  // namespace astrai
