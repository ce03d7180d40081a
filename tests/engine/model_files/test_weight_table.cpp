// The weight table (engine/model_files/weight_table.h) against lists written
// out by hand from llama.cpp's gguf-py/gguf/constants.py (MODEL_TENSORS for
// LLM_ARCH_QWEN2 / QWEN3 / QWEN2MOE / QWEN3MOE / LLAMA) and transformers'
// Qwen2/Qwen3/Qwen2Moe/Qwen3Moe/Mixtral state dicts: the
// readers, writers and the folder check all iterate the table, so a wrong
// name or shape there is wrong everywhere at once and a round trip through
// our own writer and reader would not see it. Also: every tensor's shape is
// the one ModelWeights::validate_shapes expects of its field.
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <map>
#include <set>
#include <utility>
#include <string>
#include <vector>

#include "engine/model_files/weight_table.h"
#include "reference/synthetic_model.h"

using namespace astrai;

namespace {

ModelConfig tiny(bool qkv_bias, bool qk_norm) {
  return ModelConfig{.dim = 8, .hidden_dim = 12, .n_layers = 1, .n_heads = 2, .n_kv_heads = 1, .vocab_size = 7,
                     .max_seq_len = 4, .explicit_head_dim = qk_norm ? 6 : 0, .options = {.qkv_bias = qkv_bias, .qk_norm = qk_norm}};
}

std::vector<std::string> names(const ModelConfig& c, bool tied, bool gguf) {
  std::vector<std::string> out;
  for (const auto& t : model_tensors(c, tied)) out.push_back(gguf ? t.gguf_name() : t.hf_name());
  return out;
}

}  // namespace

TEST_CASE("A Qwen 2 layer's tensors carry llama.cpp's and transformers' names for the right fields", "[weight_table]") {
  const ModelConfig c = tiny(true, false);
  ModelWeights w = make_synthetic_weights(c, 1);
  const LayerWeights& L = w.layers[0];
  // transformers' name -> (llama.cpp's name, the field it fills).
  const std::map<std::string, std::pair<std::string, const void*>> expected = {
      {"model.embed_tokens.weight", {"token_embd.weight", &w.token_embedding}},
      {"model.layers.0.input_layernorm.weight", {"blk.0.attn_norm.weight", &L.attn_norm}},
      {"model.layers.0.self_attn.q_proj.weight", {"blk.0.attn_q.weight", &L.wq}},
      {"model.layers.0.self_attn.k_proj.weight", {"blk.0.attn_k.weight", &L.wk}},
      {"model.layers.0.self_attn.v_proj.weight", {"blk.0.attn_v.weight", &L.wv}},
      {"model.layers.0.self_attn.q_proj.bias", {"blk.0.attn_q.bias", &L.bq}},
      {"model.layers.0.self_attn.k_proj.bias", {"blk.0.attn_k.bias", &L.bk}},
      {"model.layers.0.self_attn.v_proj.bias", {"blk.0.attn_v.bias", &L.bv}},
      {"model.layers.0.self_attn.o_proj.weight", {"blk.0.attn_output.weight", &L.wo}},
      {"model.layers.0.post_attention_layernorm.weight", {"blk.0.ffn_norm.weight", &L.ffn_norm}},
      {"model.layers.0.mlp.gate_proj.weight", {"blk.0.ffn_gate.weight", &L.w_gate}},
      {"model.layers.0.mlp.up_proj.weight", {"blk.0.ffn_up.weight", &L.w_up}},
      {"model.layers.0.mlp.down_proj.weight", {"blk.0.ffn_down.weight", &L.w_down}},
      {"model.norm.weight", {"output_norm.weight", &w.final_norm}},
      {"lm_head.weight", {"output.weight", &w.classifier}},
  };
  const auto tensors = model_tensors(c, false);
  CHECK(tensors.size() == expected.size());
  for (const auto& t : tensors) {
    INFO(t.hf_name());
    REQUIRE(expected.count(t.hf_name()) == 1);
    const auto& [gguf, field] = expected.at(t.hf_name());
    CHECK(t.gguf_name() == gguf);
    const void* const want = field;  // a named copy: lambdas capture structured bindings only from C++20 compilers newer than clang 14
    visit_weight(w, t, [&](const auto& f) { CHECK(static_cast<const void*>(&f) == want); });
  }
  // Shapes [out, in]: q 2 heads x 4 = 8, k/v 1 head x 4 = 4.
  for (const auto& t : tensors) {
    const std::string n = t.hf_name();
    if (n == "model.layers.0.self_attn.k_proj.weight") CHECK(t.shape == std::vector<size_t>{4, 8});
    if (n == "model.layers.0.self_attn.k_proj.bias") CHECK(t.shape == std::vector<size_t>{4});
    if (n == "model.layers.0.self_attn.o_proj.weight") CHECK(t.shape == std::vector<size_t>{8, 8});
    if (n == "model.layers.0.mlp.down_proj.weight") CHECK(t.shape == std::vector<size_t>{8, 12});
    if (n == "lm_head.weight") CHECK(t.shape == std::vector<size_t>{7, 8});
  }
}

TEST_CASE("A Qwen 3 layer has q/k norms of head_dim and no biases; a tied model has no classifier tensor",
          "[weight_table]") {
  const ModelConfig c = tiny(false, true);
  const auto g = names(c, true, true);
  const std::set<std::string> got(g.begin(), g.end());
  CHECK(got.count("blk.0.attn_q_norm.weight") == 1);
  CHECK(got.count("blk.0.attn_k_norm.weight") == 1);
  CHECK(got.count("blk.0.attn_q.bias") == 0);
  CHECK(got.count("output.weight") == 0);
  CHECK(g.size() == 1 + 11 + 1);  // embedding, 11 per layer, final norm
  for (const auto& t : model_tensors(c, true)) {
    if (t.hf_name() == "model.layers.0.self_attn.q_norm.weight") CHECK(t.shape == std::vector<size_t>{6});
    if (t.hf_name() == "model.layers.0.self_attn.q_proj.weight") CHECK(t.shape == std::vector<size_t>{12, 8});
  }
}

namespace {

// A two-layer MoE model (layer 0 dense by mlp_only_layers, layer 1 sparse) of
// 3 experts, each 5 wide.
ModelConfig tiny_moe(MoeModule module, bool shared_expert) {
  ModelConfig c = tiny(shared_expert, !shared_expert);
  c.n_layers = 2;
  c.options.moe = module;
  c.options.shared_expert = shared_expert;
  c.moe = {.n_experts = 3, .n_experts_used = 2, .expert_hidden_dim = 5, .shared_expert_hidden_dim = shared_expert ? 4 : 0,
           .dense_layers = {0}};
  return c;
}

// hf name -> gguf name of the tensors of layer 1's feed-forward block.
std::map<std::string, std::string> ffn_names(const ModelConfig& c) {
  std::map<std::string, std::string> out;
  for (const auto& t : model_tensors(c, true)) {
    if (t.layer != 1 || t.gguf_name().find("ffn_norm") != std::string::npos) continue;
    if (t.gguf_name().find("ffn") == std::string::npos) continue;
    for (const auto& hf : t.hf_names()) out[hf] = t.gguf_name();
  }
  return out;
}

}  // namespace

TEST_CASE("Qwen 3 MoE and Mixtral sparse layers: a router and stacked experts under each format's names",
          "[weight_table]") {
  using Names = std::map<std::string, std::string>;
  const Names qwen3_moe = {
      {"model.layers.1.mlp.gate.weight", "blk.1.ffn_gate_inp.weight"},
      {"model.layers.1.mlp.experts.0.gate_proj.weight", "blk.1.ffn_gate_exps.weight"},
      {"model.layers.1.mlp.experts.1.gate_proj.weight", "blk.1.ffn_gate_exps.weight"},
      {"model.layers.1.mlp.experts.2.gate_proj.weight", "blk.1.ffn_gate_exps.weight"},
      {"model.layers.1.mlp.experts.0.up_proj.weight", "blk.1.ffn_up_exps.weight"},
      {"model.layers.1.mlp.experts.1.up_proj.weight", "blk.1.ffn_up_exps.weight"},
      {"model.layers.1.mlp.experts.2.up_proj.weight", "blk.1.ffn_up_exps.weight"},
      {"model.layers.1.mlp.experts.0.down_proj.weight", "blk.1.ffn_down_exps.weight"},
      {"model.layers.1.mlp.experts.1.down_proj.weight", "blk.1.ffn_down_exps.weight"},
      {"model.layers.1.mlp.experts.2.down_proj.weight", "blk.1.ffn_down_exps.weight"},
  };
  CHECK(ffn_names(tiny_moe(MoeModule::Mlp, false)) == qwen3_moe);
  const Names mixtral = {
      {"model.layers.1.block_sparse_moe.gate.weight", "blk.1.ffn_gate_inp.weight"},
      {"model.layers.1.block_sparse_moe.experts.0.w1.weight", "blk.1.ffn_gate_exps.weight"},
      {"model.layers.1.block_sparse_moe.experts.1.w1.weight", "blk.1.ffn_gate_exps.weight"},
      {"model.layers.1.block_sparse_moe.experts.2.w1.weight", "blk.1.ffn_gate_exps.weight"},
      {"model.layers.1.block_sparse_moe.experts.0.w3.weight", "blk.1.ffn_up_exps.weight"},
      {"model.layers.1.block_sparse_moe.experts.1.w3.weight", "blk.1.ffn_up_exps.weight"},
      {"model.layers.1.block_sparse_moe.experts.2.w3.weight", "blk.1.ffn_up_exps.weight"},
      {"model.layers.1.block_sparse_moe.experts.0.w2.weight", "blk.1.ffn_down_exps.weight"},
      {"model.layers.1.block_sparse_moe.experts.1.w2.weight", "blk.1.ffn_down_exps.weight"},
      {"model.layers.1.block_sparse_moe.experts.2.w2.weight", "blk.1.ffn_down_exps.weight"},
  };
  CHECK(ffn_names(tiny_moe(MoeModule::BlockSparseMoe, false)) == mixtral);
  Names qwen2_moe = qwen3_moe;
  qwen2_moe.insert({{"model.layers.1.mlp.shared_expert_gate.weight", "blk.1.ffn_gate_inp_shexp.weight"},
                    {"model.layers.1.mlp.shared_expert.gate_proj.weight", "blk.1.ffn_gate_shexp.weight"},
                    {"model.layers.1.mlp.shared_expert.up_proj.weight", "blk.1.ffn_up_shexp.weight"},
                    {"model.layers.1.mlp.shared_expert.down_proj.weight", "blk.1.ffn_down_shexp.weight"}});
  CHECK(ffn_names(tiny_moe(MoeModule::Mlp, true)) == qwen2_moe);

  // Shapes, llama.cpp's ne reversed: ffn_gate_inp {dim, experts}, ffn_gate_exps
  // {dim, expert_hidden, experts}, ffn_down_exps {expert_hidden, dim, experts},
  // ffn_gate_inp_shexp {dim} (a [1, dim] matrix), ffn_down_shexp {shared_hidden, dim}.
  const std::map<std::string, std::vector<size_t>> shapes = {
      {"blk.1.ffn_gate_inp.weight", {3, 8}},       {"blk.1.ffn_gate_exps.weight", {3, 5, 8}},
      {"blk.1.ffn_up_exps.weight", {3, 5, 8}},     {"blk.1.ffn_down_exps.weight", {3, 8, 5}},
      {"blk.1.ffn_gate_inp_shexp.weight", {1, 8}}, {"blk.1.ffn_down_shexp.weight", {8, 4}},
      {"blk.0.ffn_gate.weight", {12, 8}}};
  for (const auto& t : model_tensors(tiny_moe(MoeModule::Mlp, true), true))
    if (shapes.count(t.gguf_name())) CHECK(t.shape == shapes.at(t.gguf_name()));
  // The dense layer keeps its SwiGLU and has no router; the sparse one no SwiGLU.
  const auto g = names(tiny_moe(MoeModule::Mlp, true), true, true);
  const std::set<std::string> got(g.begin(), g.end());
  CHECK(got.count("blk.0.ffn_gate.weight") == 1);
  CHECK(got.count("blk.0.ffn_gate_inp.weight") == 0);
  CHECK(got.count("blk.1.ffn_gate.weight") == 0);
  // Routers stay float32 in every GGUF file (llama.cpp's converter keeps them so).
  for (const auto& t : model_tensors(tiny_moe(MoeModule::Mlp, true), true))
    CHECK(t.row->keep_f32 == (t.gguf_name().find("ffn_gate_inp") != std::string::npos));
}

TEST_CASE("Every tensor of every configuration is named once per format and has its field's shape",
          "[weight_table]") {
  rc::prop("names distinct, count as the architecture says, shapes as validate_shapes", [] {
    const int heads = *rc::gen::inRange(1, 4), kv_heads = heads / *rc::gen::element(1, heads);
    const bool qkv_bias = *rc::gen::arbitrary<bool>(), qk_norm = !qkv_bias && *rc::gen::arbitrary<bool>();
    const bool tied = *rc::gen::arbitrary<bool>();
    ModelConfig c{.dim = 2 * heads * *rc::gen::inRange(1, 4), .hidden_dim = *rc::gen::inRange(1, 20),
                  .n_layers = *rc::gen::inRange(1, 4), .n_heads = heads, .n_kv_heads = kv_heads,
                  .vocab_size = *rc::gen::inRange(1, 30), .max_seq_len = 4, .options = {.qkv_bias = qkv_bias, .qk_norm = qk_norm}};
    if (qk_norm) c.explicit_head_dim = 2 * *rc::gen::inRange(1, 5);
    if (*rc::gen::arbitrary<bool>()) {  // Mixture-of-Experts, some layers dense
      c.options.moe = *rc::gen::element(MoeModule::Mlp, MoeModule::BlockSparseMoe);
      c.options.shared_expert = *rc::gen::arbitrary<bool>();
      c.moe = {.n_experts = *rc::gen::inRange(1, 5), .n_experts_used = 1, .expert_hidden_dim = *rc::gen::inRange(1, 9),
               .shared_expert_hidden_dim = c.options.shared_expert ? *rc::gen::inRange(1, 9) : 0,
               .sparse_step = *rc::gen::inRange(1, 3)};
      if (*rc::gen::arbitrary<bool>()) c.moe.dense_layers = {0};
    }
    const auto tensors = model_tensors(c, tied);
    size_t want = 2 + (tied ? 0 : 1), hf_want = want;
    for (int l = 0; l < c.n_layers; ++l) {
      const bool sparse = c.moe.sparse(l);
      const size_t experts = size_t(c.moe.n_experts);
      want += 6 + (qkv_bias ? 3 : 0) + (qk_norm ? 2 : 0) + 3 + (sparse && c.options.shared_expert ? 4 : 0) + (sparse ? 1 : 0);
      hf_want += 6 + (qkv_bias ? 3 : 0) + (qk_norm ? 2 : 0) + (sparse ? 1 + 3 * experts : 3) +
                 (sparse && c.options.shared_expert ? 4 : 0);
    }
    RC_ASSERT(tensors.size() == want);
    std::set<std::string> gguf, hf;
    size_t hf_count = 0;
    for (const auto& t : tensors) {
      gguf.insert(t.gguf_name());
      for (const auto& name : t.hf_names()) hf.insert(name), ++hf_count;
    }
    RC_ASSERT(gguf.size() == tensors.size());
    RC_ASSERT(hf.size() == hf_count);
    RC_ASSERT(hf_count == hf_want);
    // make_synthetic_weights gives every field its shape (validate_shapes
    // checks them); the biases and norms are added here at the table's shape.
    ModelWeights w = make_synthetic_weights(c, 1);
    for (const auto& t : tensors)
      visit_weight(w, t, [&](auto& field) {
        if (field.size() == 0) field.resize(std::vector<size_t>(t.shape.begin(), t.shape.end()));
      });
    w.validate_shapes();  // throws when a table shape disagrees with the model's
    for (const auto& t : tensors)
      visit_weight(std::as_const(w), t, [&](const auto& field) {
        RC_ASSERT(std::vector<size_t>(field.shape().begin(), field.shape().end()) == t.shape);
      });
  });
}
