// The Llama forward pass over a batch of tokens, each at its own position in
// its own sequence, with the options of today's Llama-family models that the
// config turns on (docs/forward-pass.md): Llama 3.1's RoPE frequency scaling,
// Qwen 2's q/k/v biases, Qwen 3's per-head q/k RMSNorm and explicit head_dim,
// Mixture-of-Experts feed-forward layers (reference/moe.h). Tokens of one sequence appear in increasing position
// order; earlier positions of that sequence are already in the cache or
// earlier in the same batch.
//
// Every token row is computed with the same arithmetic whatever else is in
// the batch (see reference/linear.h), so batching never changes a result.
#pragma once

#include <span>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "reference/batch.h"
#include "reference/kv_cache_view.h"
#include "reference/model_weights.h"

namespace astrai {

// Runs every layer, writing each token's K and V to `cache` (K after RoPE),
// and returns the logits [n_wanted, vocab_size] of the tokens with
// want_logits, in batch order. Throws std::invalid_argument for a token id or
// position out of range. `routing_margins`, when given, receives for every
// batch row the smallest ExpertChoice::margin over its sparse layers
// (infinity for dense models): how near its expert choices came to a tie.
xt::xtensor<float, 2> forward(const ModelWeights& weights, std::span<const BatchToken> batch, KVCacheView& cache,
                              std::vector<float>* routing_margins = nullptr);

}  // namespace astrai
