// A model's weights one tensor at a time: what the streaming writers
// (write_gguf_model, so `astrai convert` and `make-model`) read instead of a
// whole ModelWeights, so that converting a model holds one tensor in float32
// at a time, not the model (docs/model-files.md, "Converting in bounded memory").
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/model_files/weight_table.h"
#include "reference/model_weights.h"

namespace astrai {

struct ModelSource {
  // The model's config; rope_layout is the layout `read` gives wq/wk (and
  // their biases and norms) in.
  ModelConfig config;
  // The classifier is the embedding: the table's Untied row is never read.
  bool tied = false;
  // Tensor t's float32 values, row-major, product(t.shape) of them. Called
  // once per tensor of for_each_model_tensor(config, tied), in that order,
  // by a writer that frees them before it asks for the next.
  std::function<std::vector<float>(const ModelTensor& t)> read;
};

// A source over weights already in memory (each read copies one tensor).
// tied when the classifier equals the embedding bit for bit. `weights` must
// outlive the source.
ModelSource model_source(const ModelWeights& weights);

// make_synthetic_weights(config, seed) tensor by tensor (reference/
// synthetic_model.h: each tensor made alone, bit for bit the same), the
// classifier left out when tied (`astrai make-model --tie-embeddings`).
ModelSource synthetic_model_source(const ModelConfig& config, uint64_t seed, bool tied);

}  // namespace astrai
