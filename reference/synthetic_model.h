// Synthetic Llama-shaped models with seeded random weights, for tests and
// benchmarks. The weights depend only on (config, seed): the generator is
// written out here (splitmix64) rather than taken from <random>, whose
// distributions differ between standard libraries, so golden outputs of
// synthetic models are the same on every machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "reference/model_weights.h"

namespace astrai {

// Each matrix W[out, in] is uniform in [-a, a] with a = sqrt(3 / in), so that
// x W^T keeps the variance of x; norm weights (q_norm and k_norm too) are
// uniform in [0.5, 1.5]. The config's options shape the model: an explicit
// head_dim sizes wq/wo by q_dim (Qwen 3), qkv_bias adds bq/bk/bv uniform in
// [-1, 1] (large enough to move every logit: Qwen 2), qk_norm adds
// q_norm/k_norm (Qwen 3), rope_scaling needs no weights (Llama 3.1).
ModelWeights make_synthetic_weights(const ModelConfig& config, uint64_t seed);

// Named shapes for `astrai make-model --preset NAME`.
struct ModelPreset {
  std::string name;
  std::string description;
  ModelConfig config;
};
const std::vector<ModelPreset>& model_presets();
// Throws std::invalid_argument listing the known names when `name` is unknown.
ModelConfig preset_config(const std::string& name);

}  // namespace astrai
