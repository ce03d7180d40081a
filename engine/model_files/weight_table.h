// Every weight of the architectures AstrAI reads and writes (Llama, Mistral,
// Qwen 2, Qwen 3, Gemma 3, and the Mixture-of-Experts Mixtral, Qwen 2 MoE,
// Qwen 3 MoE and gpt-oss), one row each: its name in GGUF (llama.cpp's), its name in
// a Hugging Face folder (transformers' module path), its shape in terms of
// ModelConfig, when it is present, the ModelWeights field holding it, and the
// group a backend may keep it in (q/k/v, gate/up). The GGUF and safetensors
// readers and writers, the check that a folder holds exactly the tensors its
// config needs, the CUDA backend's upload (cuda/device_weights.cpp, which
// binds each group by its first row's field) and the benchmarks' models all
// iterate this one table: a weight's names are spelled here only, and adding
// an architecture's weight is adding a row (docs/adding-an-architecture.md).
#pragma once

#include <algorithm>
#include <array>
#include <functional>
#include <span>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "reference/model_weights.h"

namespace astrai {

// A length in a weight's shape, in terms of the config.
enum class Extent { Dim, Hidden, Vocab, QDim, KvDim, HeadDim, Heads, Experts, ExpertHidden, SharedHidden, One };
size_t extent_of(Extent extent, const ModelConfig& config);

// Rows a backend keeps as one tensor: the present rows of a group, stacked in
// table order, so that one GEMM serves q, k and v (or gate and up) and one
// bias add their biases; the experts' gate and up stacks likewise (each
// expert's gate rows then its up rows), and the shared expert's. None: the
// row is a group of its own.
enum class Fusion { None, Qkv, QkvBias, GateUp, ExpertGateUp, SharedGateUp };

// When a weight is part of a model.
enum class Presence {
  Always,
  QkvBias,  // config.options.qkv_bias (Qwen 2): q/k/v projection biases
  QkNorm,   // config.options.qk_norm (Qwen 3): per-head RMSNorm weights of q and k
  Untied,   // the classifier, stored only when it is not the embedding
  PlainNorms,     // the pre-FFN norm under Llama's name (post_attention_layernorm): no sandwich norms
  SandwichNorms,  // config.options.sandwich_norms (Gemma 3): the output norms, and the pre-FFN norm's own name
  // Per layer, by config.moe.sparse(layer):
  DenseFfn,               // a dense layer's SwiGLU (every layer of a dense model)
  ExpertsMlp,             // a sparse layer's router and experts under Qwen MoE's names (MoeModule::Mlp)
  ExpertsBlockSparseMoe,  // the same under Mixtral's names (MoeModule::BlockSparseMoe)
  SharedExpert,           // a sparse layer's shared expert (options.shared_expert: Qwen 2 MoE)
  // gpt-oss (MoeModule::GptOss):
  ExpertsGptOss,   // a sparse layer's router and experts under gpt-oss's names
  GptOssFfnNorm,   // the pre-FFN norm, which llama.cpp's gpt-oss names post_attention_norm
  RouterBias,      // options.router_bias, in a sparse layer
  ExpertBiases,    // options.expert_biases, in a sparse layer: each expert's gate, up and down biases
  OutBias,         // options.out_bias: the attention output projection's bias
  AttentionSinks,  // options.attention_sinks: one logit per query head
};

// How a Hugging Face folder stores a row, where it is not as the table's
// shape says ([out, in] matrices, a stack as one tensor per "{e}" expert).
// gpt-oss keeps each layer's experts in one tensor with the output axis
// last ([experts, in, out]; transformers' GptOssExperts computes x @ W), and
// gate and up in one tensor whose outputs interleave (gate_up_proj: gate at
// even positions, up at odd ones).
enum class HfLayout {
  AsTable,
  OutLast,         // one tensor, each expert's output axis last
  OutLastEven,     // the same, sharing the tensor with the next row: this row's outputs at even positions
  OutLastOdd,      // ... and the previous row's partner: its outputs at odd positions
};

using WeightVector = xt::xtensor<float, 1>;
using WeightMatrix = xt::xtensor<float, 2>;
using WeightStack = xt::xtensor<float, 3>;  // matrices stacked on a leading axis (a layer's experts)
// The field holding a weight: one of the whole model, or one of every layer
// (the same alternatives as reference/synthetic_model.h's SyntheticField).
using WeightField = std::variant<WeightVector ModelWeights::*, WeightMatrix ModelWeights::*,
                                 WeightVector LayerWeights::*, WeightMatrix LayerWeights::*,
                                 WeightStack LayerWeights::*>;

struct WeightRow {
  const char* gguf_name;  // per-layer rows: after "blk.N."
  // Per-layer rows: after "model.layers.N.". A stack (rank 3) is one tensor
  // per matrix in a Hugging Face folder: "{e}" in its name stands for the
  // expert's index ("mlp.experts.{e}.gate_proj.weight").
  const char* hf_name;
  std::array<Extent, 3> shape;  // row-major; vectors use shape[0] only, matrices shape[0] and [1]
  Presence presence;
  WeightField field;
  // Axis 0 runs over attention heads' dimensions, whose order is the RoPE
  // layout's (wq, wk, their biases, the q/k norms): rope_layout.h reorders
  // these rows between layouts and no others.
  bool head_rows = false;
  Fusion fusion = Fusion::None;
  // Kept in float32 by the GGUF writer whatever the file's type, as
  // llama.cpp's converter and quantizer keep routers: their scores choose
  // the experts, and rounding them would change which ones run.
  bool keep_f32 = false;
  HfLayout hf_layout = HfLayout::AsTable;

  bool per_layer() const { return field.index() >= 2; }
  size_t rank() const {
    switch (field.index()) {
      case 0: case 2: return 1;
      case 1: case 3: return 2;
      default: return 3;
    }
  }
};

// The rows, in file order: model-wide rows before and after the per-layer ones
// as they stand in the table.
std::span<const WeightRow> weight_table();

// One tensor of one model: a row, at a layer (-1 for model-wide rows), with
// its shape worked out from the config.
struct ModelTensor {
  const WeightRow* row = nullptr;
  int layer = -1;
  std::vector<size_t> shape;

  std::string gguf_name() const;  // "blk.3.attn_q.weight", "token_embd.weight"
  // "model.layers.3.self_attn.q_proj.weight"; throws for a stack stored one
  // tensor per expert.
  std::string hf_name() const;
  // A Hugging Face folder's names for it: hf_name() alone, or for a stack
  // one per matrix ("model.layers.3.mlp.experts.0.gate_proj.weight", ...),
  // each holding shape[1..] of it.
  std::vector<std::string> hf_names() const;
  // The shape of the folder's tensor hf_name() (row->hf_layout): the
  // table's, or with the output axis last and, shared with a partner row,
  // twice as long.
  std::vector<size_t> hf_shape() const;
};

// Calls `f` with each tensor a model of `config` stores, in file order: the
// rows present for it, per-layer rows once per layer; the classifier only
// when !tied. One at a time, nothing gathered first: a reader that throws at
// the first missing tensor never pays for the layers a file only claims.
void for_each_model_tensor(const ModelConfig& config, bool tied, const std::function<void(const ModelTensor&)>& f);
// The same tensors as a list (for checks that need them all).
std::vector<ModelTensor> model_tensors(const ModelConfig& config, bool tied);

// The same tensors grouped as a backend keeps them, in file order: each
// fusion group's present rows of one layer stacked in table order (at the
// place of the group's first row), every other tensor alone.
struct WeightGroup {
  std::vector<ModelTensor> tensors;  // never empty; all of one layer (-1: model-wide), all of one rank
  const WeightRow& first() const { return *tensors.front().row; }
  int layer() const { return tensors.front().layer; }
};
std::vector<WeightGroup> weight_groups(const ModelConfig& config, bool tied);

// Calls f(xtensor&) with the field `t` names in `weights` (const or not).
// Writing to a layer's field appends layers up to t.layer first, so that a
// reader going through model_tensors() in order grows the model one layer at
// a time (a file's layer count is a claim, and only layers whose tensors are
// really there may take memory).
template <class Field>
struct FieldOwner;
template <class Owner, class Member>
struct FieldOwner<Member Owner::*> {
  using type = Owner;
};

template <class Weights, class F>
void visit_weight(Weights& weights, const ModelTensor& t, F&& f) {
  std::visit(
      [&](auto field) {
        if constexpr (std::is_same_v<typename FieldOwner<decltype(field)>::type, ModelWeights>) {
          f(weights.*field);
        } else {
          if constexpr (!std::is_const_v<Weights>)
            while (weights.layers.size() <= size_t(t.layer)) weights.layers.emplace_back();
          f(weights.layers.at(size_t(t.layer)).*field);
        }
      },
      t.row->field);
}

// The weights of a model of `config`, each tensor of for_each_model_tensor
// read in file order by `read(tensor, shape)` (shape a std::array<size_t, 1 or
// 2>, read returns an xtensor of that rank); a tied classifier is a copy of
// the embedding. The readers of every format go through this.
template <class Read>
ModelWeights read_model_weights(const ModelConfig& config, bool tied, Read&& read) {
  ModelWeights w;
  w.config = config;
  for_each_model_tensor(config, tied, [&](const ModelTensor& t) {
    visit_weight(w, t, [&](auto& field) {
      constexpr size_t rank = std::remove_reference_t<decltype(field)>::rank;
      std::array<size_t, rank> shape;
      std::copy(t.shape.begin(), t.shape.end(), shape.begin());
      field = read(t, shape);
    });
  });
  if (tied) w.classifier = w.token_embedding;
  return w;
}

}  // namespace astrai
