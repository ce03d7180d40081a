// The weight table (see weight_table.h). Names: llama.cpp's
// gguf-py/gguf/tensor_mapping.py (GGUF) and transformers' modeling_llama.py,
// modeling_qwen2.py, modeling_qwen3.py (Hugging Face). Matrices are
// [out_features, in_features], as both formats store them.
#include "engine/model_files/weight_table.h"

namespace astrai {
namespace {

using enum Extent;
using L = LayerWeights;
using M = ModelWeights;

// Vectors name one extent.
// clang-format off
const WeightRow kRows[] = {
  // gguf_name             hf_name                               shape              presence            field   head_rows  fusion
  {"token_embd.weight",    "model.embed_tokens.weight",          {Vocab, Dim},      Presence::Always,  &M::token_embedding},
  {"attn_norm.weight",     "input_layernorm.weight",             {Dim},        Presence::Always,  &L::attn_norm},
  {"attn_q.weight",        "self_attn.q_proj.weight",            {QDim, Dim},       Presence::Always,  &L::wq, true,  Fusion::Qkv},
  {"attn_k.weight",        "self_attn.k_proj.weight",            {KvDim, Dim},      Presence::Always,  &L::wk, true,  Fusion::Qkv},
  {"attn_v.weight",        "self_attn.v_proj.weight",            {KvDim, Dim},      Presence::Always,  &L::wv, false, Fusion::Qkv},
  {"attn_q.bias",          "self_attn.q_proj.bias",              {QDim},      Presence::QkvBias, &L::bq, true,  Fusion::QkvBias},
  {"attn_k.bias",          "self_attn.k_proj.bias",              {KvDim},    Presence::QkvBias, &L::bk, true,  Fusion::QkvBias},
  {"attn_v.bias",          "self_attn.v_proj.bias",              {KvDim},    Presence::QkvBias, &L::bv, false, Fusion::QkvBias},
  {"attn_output.weight",   "self_attn.o_proj.weight",            {Dim, QDim},       Presence::Always,  &L::wo},
  {"attn_q_norm.weight",   "self_attn.q_norm.weight",            {HeadDim}, Presence::QkNorm, &L::q_norm, true},
  {"attn_k_norm.weight",   "self_attn.k_norm.weight",            {HeadDim}, Presence::QkNorm, &L::k_norm, true},
  {"ffn_norm.weight",      "post_attention_layernorm.weight",    {Dim},        Presence::Always,  &L::ffn_norm},
  {"ffn_gate.weight",      "mlp.gate_proj.weight",               {Hidden, Dim},     Presence::Always,  &L::w_gate, false, Fusion::GateUp},
  {"ffn_up.weight",        "mlp.up_proj.weight",                 {Hidden, Dim},     Presence::Always,  &L::w_up, false, Fusion::GateUp},
  {"ffn_down.weight",      "mlp.down_proj.weight",               {Dim, Hidden},     Presence::Always,  &L::w_down},
  {"output_norm.weight",   "model.norm.weight",                  {Dim},        Presence::Always,  &M::final_norm},
  {"output.weight",        "lm_head.weight",                     {Vocab, Dim},      Presence::Untied,  &M::classifier},
};
// clang-format on

bool present(Presence p, const ModelConfig& c, bool tied) {
  switch (p) {
    case Presence::Always: return true;
    case Presence::QkvBias: return c.options.qkv_bias;
    case Presence::QkNorm: return c.options.qk_norm;
    case Presence::Untied: return !tied;
  }
  return false;
}

ModelTensor tensor_of(const WeightRow& row, int layer, const ModelConfig& c) {
  ModelTensor t{&row, layer, {extent_of(row.shape[0], c)}};
  if (row.rank() == 2) t.shape.push_back(extent_of(row.shape[1], c));
  return t;
}

}  // namespace

size_t extent_of(Extent extent, const ModelConfig& c) {
  switch (extent) {
    case Dim: return size_t(c.dim);
    case Hidden: return size_t(c.hidden_dim);
    case Vocab: return size_t(c.vocab_size);
    case QDim: return size_t(c.q_dim());
    case KvDim: return size_t(c.kv_dim());
    case HeadDim: return size_t(c.head_dim());
  }
  return 0;
}

std::span<const WeightRow> weight_table() { return kRows; }

std::string ModelTensor::gguf_name() const {
  return row->per_layer() ? "blk." + std::to_string(layer) + "." + row->gguf_name : std::string(row->gguf_name);
}

std::string ModelTensor::hf_name() const {
  return row->per_layer() ? "model.layers." + std::to_string(layer) + "." + row->hf_name : std::string(row->hf_name);
}

void for_each_model_tensor(const ModelConfig& c, bool tied, const std::function<void(const ModelTensor&)>& f) {
  const auto rows = weight_table();
  size_t i = 0;
  // Model-wide rows before the first per-layer row, then every layer, then the rest.
  for (; i < rows.size() && !rows[i].per_layer(); ++i)
    if (present(rows[i].presence, c, tied)) f(tensor_of(rows[i], -1, c));
  const size_t first_layer_row = i;
  while (i < rows.size() && rows[i].per_layer()) ++i;
  for (int l = 0; l < c.n_layers; ++l)
    for (size_t r = first_layer_row; r < i; ++r)
      if (present(rows[r].presence, c, tied)) f(tensor_of(rows[r], l, c));
  for (; i < rows.size(); ++i)
    if (present(rows[i].presence, c, tied)) f(tensor_of(rows[i], -1, c));
}

std::vector<ModelTensor> model_tensors(const ModelConfig& c, bool tied) {
  std::vector<ModelTensor> out;
  for_each_model_tensor(c, tied, [&](const ModelTensor& t) { out.push_back(t); });
  return out;
}

std::vector<WeightGroup> weight_groups(const ModelConfig& c, bool tied) {
  std::vector<WeightGroup> out;
  for_each_model_tensor(c, tied, [&](const ModelTensor& t) {
    // A row joins its fusion group when the group is already open in this layer.
    if (t.row->fusion != Fusion::None)
      for (auto g = out.rbegin(); g != out.rend() && g->layer() == t.layer; ++g)
        if (g->first().fusion == t.row->fusion) {
          g->tensors.push_back(t);
          return;
        }
    out.push_back(WeightGroup{{t}});
  });
  return out;
}

}  // namespace astrai
