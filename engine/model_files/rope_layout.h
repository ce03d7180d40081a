// Moving a model's weights between the two RoPE layouts (reference/model_config.h).
// Within each head, rotate-half pairs dimension i with i + head_dim/2 and
// adjacent-pairs pairs 2i with 2i + 1; the same pairs rotate by the same angle,
// so reordering the head's dimensions (rows of wq and wk, entries of their
// biases and of the q/k norm weights: the weight table's head_rows) from one
// layout to the other leaves every q.k product, and so the model, unchanged.
// This is the permutation llama.cpp's convert_hf_to_gguf.py applies to
// Llama's q_proj and k_proj.
#pragma once

#include <span>

#include "engine/model_files/model_source.h"
#include "engine/model_files/weight_table.h"
#include "reference/model_weights.h"

namespace astrai {

// The weights in `target` layout (a copy of `weights` when already there).
ModelWeights with_rope_layout(ModelWeights weights, RopeLayout target);
// A source whose reads give its tensors in `target` layout, each moved as it
// is read (to_rope_layout below); its config says `target`.
ModelSource with_rope_layout(ModelSource source, RopeLayout target);

// One tensor's values (row-major, t.shape) moved in place from `config`'s
// layout to `target`: reordered when t's row has head_rows and the layouts
// differ, else left as they are. What the streaming writers apply tensor by
// tensor; with_rope_layout is this over every tensor.
void to_rope_layout(std::span<float> values, const ModelTensor& t, const ModelConfig& config, RopeLayout target);

}  // namespace astrai
