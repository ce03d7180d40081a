// The weight table (engine/model_files/weight_table.h) against lists written
// out by hand from llama.cpp's gguf-py/gguf/constants.py (MODEL_TENSORS for
// LLM_ARCH_QWEN2 / QWEN3) and transformers' Qwen2/Qwen3 state dicts: the
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
    const auto tensors = model_tensors(c, tied);
    const size_t per_layer = 9 + (qkv_bias ? 3 : 0) + (qk_norm ? 2 : 0);
    RC_ASSERT(tensors.size() == 2 + (tied ? 0 : 1) + per_layer * size_t(c.n_layers));
    std::set<std::string> gguf, hf;
    for (const auto& t : tensors) {
      gguf.insert(t.gguf_name());
      hf.insert(t.hf_name());
    }
    RC_ASSERT(gguf.size() == tensors.size());
    RC_ASSERT(hf.size() == tensors.size());
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
