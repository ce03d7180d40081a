// Synthetic Llama-shaped models with seeded random weights, for tests and
// benchmarks. The weights depend only on (config, seed): the generator is
// written out here (splitmix64) rather than taken from <random>, whose
// distributions differ between standard libraries, so golden outputs of
// synthetic models are the same on every machine.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "reference/model_weights.h"

namespace astrai {

// Each matrix W[out, in] is uniform in [-a, a] with a = sqrt(3 / in), so that
// x W^T keeps the variance of x; norm weights (q_norm and k_norm too) are
// uniform in [0.5, 1.5]. The config's options shape the model: an explicit
// head_dim sizes wq/wo by q_dim (Qwen 3), qkv_bias adds bq/bk/bv uniform in
// [-1, 1] (large enough to move every logit: Qwen 2), qk_norm adds
// q_norm/k_norm (Qwen 3), rope_scaling needs no weights (Llama 3.1). Sparse
// layers (config.moe) get a router and expert stacks drawn as matrices (so
// router scores have the spread of any projection and routing is far from
// ties), a router bias uniform in [-1, 1], and a shared expert's matrices;
// attention sinks are uniform in [-1, 1] (the range of the synthetic
// models' attention scores, so a sink takes a share that matters).
ModelWeights make_synthetic_weights(const ModelConfig& config, uint64_t seed);

// One tensor of make_synthetic_weights(config, seed), bit for bit, made
// without the others (so a writer can stream a model of any size): `field`
// names it (a ModelWeights or LayerWeights member), `layer` its layer
// (ignored for model-wide fields). The generator is counter-based (after k
// draws splitmix64's state is seed + k * gamma), so the tensor's draws start
// at the count of draws make_synthetic_weights makes before it. Row-major
// values; throws std::invalid_argument for a field the config has no tensor
// for (bq without qkv_bias, a layer out of range).
using SyntheticField = std::variant<xt::xtensor<float, 1> ModelWeights::*, xt::xtensor<float, 2> ModelWeights::*,
                                    xt::xtensor<float, 1> LayerWeights::*, xt::xtensor<float, 2> LayerWeights::*,
                                    xt::xtensor<float, 3> LayerWeights::*>;
// The class a SyntheticField's member belongs to (ModelWeights or LayerWeights).
template <class Field>
struct SyntheticFieldOwner;
template <class Owner, class Member>
struct SyntheticFieldOwner<Member Owner::*> {
  using type = Owner;
};
std::vector<float> synthetic_tensor(const ModelConfig& config, uint64_t seed, const SyntheticField& field, int layer);

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
