// The weight table (see weight_table.h). Names: llama.cpp's
// gguf-py/gguf/tensor_mapping.py and src/llama-arch.cpp (GGUF) and
// transformers' modeling_llama.py, modeling_qwen2.py, modeling_qwen3.py,
// modeling_mixtral.py, modeling_qwen2_moe.py, modeling_qwen3_moe.py,
// modeling_gemma3.py, modeling_gpt_oss.py (Hugging Face); llama.cpp's
// src/models/openai-moe.cpp for gpt-oss's GGUF shapes. Matrices are
// [out_features, in_features], as both formats store them (gpt-oss's folders
// aside: HfLayout); expert stacks [experts, out, in] (llama.cpp's
// ffn_*_exps, whose ne is {in, out, experts}).
#include "engine/model_files/weight_table.h"

#include <stdexcept>

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
  {"attn_output.bias",     "self_attn.o_proj.bias",              {Dim},       Presence::OutBias, &L::bo},
  {"attn_sinks.weight",    "self_attn.sinks",                    {Heads},     Presence::AttentionSinks, &L::sinks},
  {"attn_q_norm.weight",   "self_attn.q_norm.weight",            {HeadDim}, Presence::QkNorm, &L::q_norm, true},
  {"attn_k_norm.weight",   "self_attn.k_norm.weight",            {HeadDim}, Presence::QkNorm, &L::k_norm, true},
  {"ffn_norm.weight",      "post_attention_layernorm.weight",    {Dim},        Presence::PlainNorms, &L::ffn_norm},
  // Gemma 3's four norms a layer: transformers' post_attention_layernorm is
  // the attention output's (llama.cpp's post_attention_norm), and the norm
  // before the feed-forward is pre_feedforward_layernorm.
  {"post_attention_norm.weight", "post_attention_layernorm.weight", {Dim},    Presence::SandwichNorms, &L::post_attn_norm},
  {"ffn_norm.weight",      "pre_feedforward_layernorm.weight",   {Dim},        Presence::SandwichNorms, &L::ffn_norm},
  {"post_ffw_norm.weight", "post_feedforward_layernorm.weight",  {Dim},        Presence::SandwichNorms, &L::post_ffn_norm},
  // gpt-oss's pre-FFN norm: transformers' name as Llama's, llama.cpp's as Gemma's attention output norm.
  {"post_attention_norm.weight", "post_attention_layernorm.weight", {Dim},    Presence::GptOssFfnNorm, &L::ffn_norm},
  {"ffn_gate.weight",      "mlp.gate_proj.weight",               {Hidden, Dim},     Presence::DenseFfn, &L::w_gate, false, Fusion::GateUp},
  {"ffn_up.weight",        "mlp.up_proj.weight",                 {Hidden, Dim},     Presence::DenseFfn, &L::w_up, false, Fusion::GateUp},
  {"ffn_down.weight",      "mlp.down_proj.weight",               {Dim, Hidden},     Presence::DenseFfn, &L::w_down},
  // Sparse layers: the router (kept F32) and the experts, under Qwen MoE's names ...
  {"ffn_gate_inp.weight",  "mlp.gate.weight",                    {Experts, Dim},    Presence::ExpertsMlp, &L::router, false, Fusion::None, true},
  {"ffn_gate_exps.weight", "mlp.experts.{e}.gate_proj.weight",   {Experts, ExpertHidden, Dim}, Presence::ExpertsMlp, &L::exp_gate, false, Fusion::ExpertGateUp},
  {"ffn_up_exps.weight",   "mlp.experts.{e}.up_proj.weight",     {Experts, ExpertHidden, Dim}, Presence::ExpertsMlp, &L::exp_up, false, Fusion::ExpertGateUp},
  {"ffn_down_exps.weight", "mlp.experts.{e}.down_proj.weight",   {Experts, Dim, ExpertHidden}, Presence::ExpertsMlp, &L::exp_down},
  // ... and Mixtral's (w1 gate, w3 up, w2 down, as llama2.c numbers them too)
  {"ffn_gate_inp.weight",  "block_sparse_moe.gate.weight",       {Experts, Dim},    Presence::ExpertsBlockSparseMoe, &L::router, false, Fusion::None, true},
  {"ffn_gate_exps.weight", "block_sparse_moe.experts.{e}.w1.weight", {Experts, ExpertHidden, Dim}, Presence::ExpertsBlockSparseMoe, &L::exp_gate, false, Fusion::ExpertGateUp},
  {"ffn_up_exps.weight",   "block_sparse_moe.experts.{e}.w3.weight", {Experts, ExpertHidden, Dim}, Presence::ExpertsBlockSparseMoe, &L::exp_up, false, Fusion::ExpertGateUp},
  {"ffn_down_exps.weight", "block_sparse_moe.experts.{e}.w2.weight", {Experts, Dim, ExpertHidden}, Presence::ExpertsBlockSparseMoe, &L::exp_down},
  // ... and gpt-oss's: a router with a bias, and each layer's experts in one
  // tensor with the output axis last, gate and up interleaved (HfLayout);
  // the biases are [experts, out] matrices, kept F32 as llama.cpp's
  // converter keeps every bias.
  {"ffn_gate_inp.weight",  "mlp.router.weight",                  {Experts, Dim},    Presence::ExpertsGptOss, &L::router, false, Fusion::None, true},
  {"ffn_gate_inp.bias",    "mlp.router.bias",                    {Experts},   Presence::RouterBias, &L::router_bias},
  {"ffn_gate_exps.weight", "mlp.experts.gate_up_proj",           {Experts, ExpertHidden, Dim}, Presence::ExpertsGptOss, &L::exp_gate, false, Fusion::ExpertGateUp, false, HfLayout::OutLastEven},
  {"ffn_up_exps.weight",   "mlp.experts.gate_up_proj",           {Experts, ExpertHidden, Dim}, Presence::ExpertsGptOss, &L::exp_up, false, Fusion::ExpertGateUp, false, HfLayout::OutLastOdd},
  {"ffn_down_exps.weight", "mlp.experts.down_proj",              {Experts, Dim, ExpertHidden}, Presence::ExpertsGptOss, &L::exp_down, false, Fusion::None, false, HfLayout::OutLast},
  {"ffn_gate_exps.bias",   "mlp.experts.gate_up_proj_bias",      {Experts, ExpertHidden}, Presence::ExpertBiases, &L::exp_gate_bias, false, Fusion::None, true, HfLayout::OutLastEven},
  {"ffn_up_exps.bias",     "mlp.experts.gate_up_proj_bias",      {Experts, ExpertHidden}, Presence::ExpertBiases, &L::exp_up_bias, false, Fusion::None, true, HfLayout::OutLastOdd},
  {"ffn_down_exps.bias",   "mlp.experts.down_proj_bias",         {Experts, Dim},    Presence::ExpertBiases, &L::exp_down_bias, false, Fusion::None, true, HfLayout::OutLast},
  // Qwen 2 MoE's shared expert and its gate (a [1, dim] matrix; llama.cpp
  // declares it {dim}, which its loader takes as the same shape).
  {"ffn_gate_inp_shexp.weight", "mlp.shared_expert_gate.weight", {One, Dim},      Presence::SharedExpert, &L::shexp_gate_inp, false, Fusion::None, true},
  {"ffn_gate_shexp.weight", "mlp.shared_expert.gate_proj.weight", {SharedHidden, Dim}, Presence::SharedExpert, &L::shexp_gate, false, Fusion::SharedGateUp},
  {"ffn_up_shexp.weight",  "mlp.shared_expert.up_proj.weight",  {SharedHidden, Dim}, Presence::SharedExpert, &L::shexp_up, false, Fusion::SharedGateUp},
  {"ffn_down_shexp.weight", "mlp.shared_expert.down_proj.weight", {Dim, SharedHidden}, Presence::SharedExpert, &L::shexp_down},
  {"output_norm.weight",   "model.norm.weight",                  {Dim},        Presence::Always,  &M::final_norm},
  {"output.weight",        "lm_head.weight",                     {Vocab, Dim},      Presence::Untied,  &M::classifier},
};
// clang-format on

// Whether row `p` is part of a model of config `c` (at `layer`, -1 for model-wide rows).
bool present(Presence p, const ModelConfig& c, bool tied, int layer) {
  const bool sparse = layer >= 0 && c.moe.sparse(layer);
  switch (p) {
    case Presence::Always: return true;
    case Presence::PlainNorms: return !c.options.sandwich_norms && c.options.moe != MoeModule::GptOss;
    case Presence::SandwichNorms: return c.options.sandwich_norms;
    case Presence::QkvBias: return c.options.qkv_bias;
    case Presence::QkNorm: return c.options.qk_norm;
    case Presence::Untied: return !tied;
    case Presence::DenseFfn: return !sparse;
    case Presence::ExpertsMlp: return sparse && c.options.moe == MoeModule::Mlp;
    case Presence::ExpertsBlockSparseMoe: return sparse && c.options.moe == MoeModule::BlockSparseMoe;
    case Presence::SharedExpert: return sparse && c.options.shared_expert;
    case Presence::ExpertsGptOss: return sparse && c.options.moe == MoeModule::GptOss;
    case Presence::GptOssFfnNorm: return c.options.moe == MoeModule::GptOss;
    case Presence::RouterBias: return sparse && c.options.router_bias;
    case Presence::ExpertBiases: return sparse && c.options.expert_biases;
    case Presence::OutBias: return c.options.out_bias;
    case Presence::AttentionSinks: return c.options.attention_sinks;
  }
  return false;
}

ModelTensor tensor_of(const WeightRow& row, int layer, const ModelConfig& c) {
  ModelTensor t{&row, layer, {}};
  for (size_t d = 0; d < row.rank(); ++d) t.shape.push_back(extent_of(row.shape[d], c));
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
    case Heads: return size_t(c.n_heads);
    case Experts: return size_t(c.moe.n_experts);
    case ExpertHidden: return size_t(c.moe.expert_hidden_dim);
    case SharedHidden: return size_t(c.moe.shared_expert_hidden_dim);
    case One: return 1;
  }
  return 0;
}

std::span<const WeightRow> weight_table() { return kRows; }

std::string ModelTensor::gguf_name() const {
  return row->per_layer() ? "blk." + std::to_string(layer) + "." + row->gguf_name : std::string(row->gguf_name);
}

std::string ModelTensor::hf_name() const {
  if (row->rank() == 3 && row->hf_layout == HfLayout::AsTable)
    throw std::logic_error(std::string("ModelTensor::hf_name: ") + row->gguf_name + " is a stack (see hf_names)");
  return row->per_layer() ? "model.layers." + std::to_string(layer) + "." + row->hf_name : std::string(row->hf_name);
}

std::vector<std::string> ModelTensor::hf_names() const {
  if (row->rank() != 3 || row->hf_layout != HfLayout::AsTable) return {hf_name()};
  const std::string pattern = row->hf_name, slot = "{e}";
  const size_t at = pattern.find(slot);
  std::vector<std::string> names;
  for (size_t e = 0; e < shape[0]; ++e)
    names.push_back("model.layers." + std::to_string(layer) + "." + pattern.substr(0, at) + std::to_string(e) +
                    pattern.substr(at + slot.size()));
  return names;
}

std::vector<size_t> ModelTensor::hf_shape() const {
  std::vector<size_t> s = shape;
  if (row->hf_layout == HfLayout::AsTable) return s;
  if (s.size() == 3) std::swap(s[1], s[2]);  // [experts, in, out]
  if (row->hf_layout != HfLayout::OutLast) s.back() *= 2;  // two rows' outputs interleaved
  return s;
}

void for_each_model_tensor(const ModelConfig& c, bool tied, const std::function<void(const ModelTensor&)>& f) {
  const auto rows = weight_table();
  size_t i = 0;
  // Model-wide rows before the first per-layer row, then every layer, then the rest.
  for (; i < rows.size() && !rows[i].per_layer(); ++i)
    if (present(rows[i].presence, c, tied, -1)) f(tensor_of(rows[i], -1, c));
  const size_t first_layer_row = i;
  while (i < rows.size() && rows[i].per_layer()) ++i;
  for (int l = 0; l < c.n_layers; ++l)
    for (size_t r = first_layer_row; r < i; ++r)
      if (present(rows[r].presence, c, tied, l)) f(tensor_of(rows[r], l, c));
  for (; i < rows.size(); ++i)
    if (present(rows[i].presence, c, tied, -1)) f(tensor_of(rows[i], -1, c));
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
