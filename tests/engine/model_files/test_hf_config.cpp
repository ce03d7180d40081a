// config.json and generation_config.json: the real field sets of Llama 3.2,
// Llama 3.1, Qwen 2.5, Qwen 3, Mistral (v0.1 with its sliding window, v0.3
// without) and the Mixture-of-Experts Qwen 3 30B-A3B, Mixtral 8x7B and Qwen
// 1.5 MoE A2.7B map to the right ModelConfig; each bad value is refused naming the
// field; written configs read back to the same ModelConfig.
#include <algorithm>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <nlohmann/json.hpp>

#include "engine/model_files/architectures.h"
#include "engine/model_files/hf/hf_config.h"

using namespace astrai;
using Catch::Matchers::Contains;

namespace {

// The layer options of an architecture, written out here (not read from the
// architecture table under test).
LayerOptions architecture_options(HfArchitecture arch) {
  switch (arch) {
    case HfArchitecture::Llama: case HfArchitecture::Mistral: return {};
    case HfArchitecture::Qwen2: return {.qkv_bias = true};
    case HfArchitecture::Qwen3: return {.qk_norm = true};
    case HfArchitecture::Mixtral: return {.moe = MoeModule::BlockSparseMoe};
    case HfArchitecture::Qwen2Moe: return {.qkv_bias = true, .moe = MoeModule::Mlp, .shared_expert = true};
    case HfArchitecture::Qwen3Moe: return {.qk_norm = true, .moe = MoeModule::Mlp};
    case HfArchitecture::Gemma3:
      return {.qk_norm = true, .norm_unit_offset = true, .sandwich_norms = true, .gelu_tanh = true,
              .scaled_embedding = true};
    case HfArchitecture::GptOss:
      return {.qkv_bias = true, .moe = MoeModule::GptOss, .router_bias = true, .attention_sinks = true,
              .expert_biases = true, .out_bias = true};
  }
  return {};
}

// config.json of meta-llama/Llama-3.2-1B (as published).
const char* kLlama32_1B = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 128000, "eos_token_id": 128001, "head_dim": 64, "hidden_act": "silu",
  "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 8192,
  "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
  "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8, "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
  "transformers_version": "4.45.0.dev0", "use_cache": true, "vocab_size": 128256})";

// meta-llama/Llama-3.1-8B-Instruct: no head_dim, untied, a list of EOS ids.
const char* kLlama31_8B = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "hidden_act": "silu",
  "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
  "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
  "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "transformers_version": "4.42.3", "use_cache": true, "vocab_size": 128256})";

// Qwen/Qwen2.5-0.5B: q/k/v biases implied by the architecture; a sliding
// window that is off (use_sliding_window false).
const char* kQwen25_05B = R"({
  "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
  "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 896, "initializer_range": 0.02,
  "intermediate_size": 4864, "max_position_embeddings": 32768, "max_window_layers": 24,
  "model_type": "qwen2", "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2,
  "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": true,
  "torch_dtype": "bfloat16", "transformers_version": "4.40.1", "use_cache": true, "use_mrope": false,
  "use_sliding_window": false, "vocab_size": 151936})";

// Qwen/Qwen3-0.6B: head_dim 128 although hidden_size / heads = 64; an integer rope_theta.
const char* kQwen3_06B = R"({
  "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
  "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 3072,
  "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
  "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
  "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null, "tie_word_embeddings": true,
  "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": true,
  "use_sliding_window": false, "vocab_size": 151936})";

// mistralai/Mistral-7B-v0.3: sliding_window null (full attention).
const char* kMistral7B_v03 = R"({
  "architectures": ["MistralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2,
  "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
  "max_position_embeddings": 32768, "model_type": "mistral", "num_attention_heads": 32,
  "num_hidden_layers": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0,
  "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "transformers_version": "4.42.0.dev0", "use_cache": true, "vocab_size": 32768})";

// mistralai/Mistral-7B-v0.1: a 4096-token sliding window.
const char* kMistral7B_v01 = R"({
  "architectures": ["MistralForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
  "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
  "max_position_embeddings": 32768, "model_type": "mistral", "num_attention_heads": 32,
  "num_hidden_layers": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
  "sliding_window": 4096, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "transformers_version": "4.34.0.dev0", "use_cache": true, "vocab_size": 32000})";

// The fixture with `edit` applied to its JSON.
std::string edited(const char* fixture, const std::function<void(nlohmann::json&)>& edit) {
  auto j = nlohmann::json::parse(fixture);
  edit(j);
  return j.dump();
}

std::string config_error(const std::string& text) {
  try {
    (void)parse_hf_config(text, "m/config.json");
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    REQUIRE(message.rfind("m/config.json: ", 0) == 0);
    return message;
  }
  return "";
}

}  // namespace

// Qwen/Qwen3-30B-A3B (as published): 128 experts of 768, top 8, renormalised.
const char* kQwen3_30B_A3B = R"({
  "architectures": ["Qwen3MoeForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 151643, "decoder_sparse_step": 1, "eos_token_id": 151645, "head_dim": 128,
  "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 6144,
  "max_position_embeddings": 40960, "max_window_layers": 48, "mlp_only_layers": [], "model_type": "qwen3_moe",
  "moe_intermediate_size": 768, "norm_topk_prob": true, "num_attention_heads": 32, "num_experts": 128,
  "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_key_value_heads": 4, "output_router_logits": false,
  "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001,
  "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "transformers_version": "4.51.0", "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})";

// mistralai/Mixtral-8x7B-v0.1: 8 experts of intermediate_size, top 2.
const char* kMixtral_8x7B = R"({
  "architectures": ["MixtralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2,
  "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
  "max_position_embeddings": 32768, "model_type": "mixtral", "num_attention_heads": 32,
  "num_experts_per_tok": 2, "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8,
  "output_router_logits": false, "rms_norm_eps": 1e-05, "rope_theta": 1e6, "router_aux_loss_coef": 0.02,
  "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "transformers_version": "4.36.0.dev0", "use_cache": true, "vocab_size": 32000})";

// Qwen/Qwen1.5-MoE-A2.7B: 60 experts of 1408, top 4, not renormalised, a
// shared expert of 5632.
const char* kQwen15_MoE_A27B = R"({
  "architectures": ["Qwen2MoeForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
  "decoder_sparse_step": 1, "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 2048,
  "initializer_range": 0.02, "intermediate_size": 5632, "max_position_embeddings": 8192,
  "max_window_layers": 21, "model_type": "qwen2_moe", "moe_intermediate_size": 1408, "norm_topk_prob": false,
  "num_attention_heads": 16, "num_experts": 60, "num_experts_per_tok": 4, "num_hidden_layers": 24,
  "num_key_value_heads": 16, "output_router_logits": false, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
  "router_aux_loss_coef": 0.001, "shared_expert_intermediate_size": 5632, "sliding_window": 32768,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.40.0.dev0",
  "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})";

TEST_CASE("config.json of Llama 3.2 1B", "[hf_config]") {
  const HfModelConfig hf = parse_hf_config(kLlama32_1B, "config.json");
  const ModelConfig& c = hf.config;
  CHECK(hf.architecture == HfArchitecture::Llama);
  CHECK(c.dim == 2048);
  CHECK(c.hidden_dim == 8192);
  CHECK(c.n_layers == 16);
  CHECK(c.n_heads == 32);
  CHECK(c.n_kv_heads == 8);
  CHECK(c.vocab_size == 128256);
  CHECK(c.max_seq_len == 131072);
  CHECK(c.rope_theta == 500000.0f);
  CHECK(c.norm_eps == 1e-5f);
  CHECK(c.rope_layout == RopeLayout::RotateHalf);
  CHECK(c.explicit_head_dim == 64);
  CHECK(c.head_dim() == 64);
  CHECK(!c.options.qkv_bias);
  CHECK(!c.options.qk_norm);
  CHECK(c.rope_scaling.enabled());
  CHECK(c.rope_scaling.factor == 32.0f);
  CHECK(c.rope_scaling.low_freq_factor == 1.0f);
  CHECK(c.rope_scaling.high_freq_factor == 4.0f);
  CHECK(c.rope_scaling.original_context == 8192);
  CHECK(hf.tie_word_embeddings);
  CHECK(hf.torch_dtype == "bfloat16");
  CHECK(c.sliding_window == 0);
  CHECK(hf.eos_token_ids == std::vector<int>{128001});
  CHECK(hf.bos_token_id == 128000);
}

TEST_CASE("config.json of Llama 3.1 8B Instruct", "[hf_config]") {
  const HfModelConfig hf = parse_hf_config(kLlama31_8B, "config.json");
  CHECK(hf.config.dim == 4096);
  CHECK(hf.config.hidden_dim == 14336);
  CHECK(hf.config.explicit_head_dim == 0);
  CHECK(hf.config.head_dim() == 128);
  CHECK(hf.config.rope_scaling.factor == 8.0f);
  CHECK(!hf.tie_word_embeddings);
  CHECK(hf.eos_token_ids == std::vector<int>{128001, 128008, 128009});
}

TEST_CASE("config.json of Qwen 2.5 0.5B", "[hf_config]") {
  const HfModelConfig hf = parse_hf_config(kQwen25_05B, "config.json");
  const ModelConfig& c = hf.config;
  CHECK(hf.architecture == HfArchitecture::Qwen2);
  CHECK(c.dim == 896);
  CHECK(c.hidden_dim == 4864);
  CHECK(c.n_layers == 24);
  CHECK(c.n_heads == 14);
  CHECK(c.n_kv_heads == 2);
  CHECK(c.head_dim() == 64);
  CHECK(c.vocab_size == 151936);
  CHECK(c.max_seq_len == 32768);  // use_sliding_window false: the window does not apply
  CHECK(c.rope_theta == 1e6f);
  CHECK(c.norm_eps == 1e-6f);
  CHECK(c.options.qkv_bias);
  CHECK(!c.options.qk_norm);
  CHECK(!c.rope_scaling.enabled());
  CHECK(hf.tie_word_embeddings);
  CHECK(c.sliding_window == 0);
}

TEST_CASE("config.json of Qwen 3 0.6B", "[hf_config]") {
  const HfModelConfig hf = parse_hf_config(kQwen3_06B, "config.json");
  const ModelConfig& c = hf.config;
  CHECK(hf.architecture == HfArchitecture::Qwen3);
  CHECK(c.dim == 1024);
  CHECK(c.hidden_dim == 3072);
  CHECK(c.n_layers == 28);
  CHECK(c.n_heads == 16);
  CHECK(c.n_kv_heads == 8);
  CHECK(c.explicit_head_dim == 128);
  CHECK(c.q_dim() == 2048);  // wider than hidden_size
  CHECK(c.kv_dim() == 1024);
  CHECK(c.max_seq_len == 40960);
  CHECK(c.rope_theta == 1e6f);
  CHECK(c.options.qk_norm);
  CHECK(!c.options.qkv_bias);
  CHECK(hf.eos_token_ids == std::vector<int>{151645});
}

// google/gemma-3-1b-it's config.json (transformers 4.50), and the text
// config of gemma-3-4b-it with its linear scaling and 1,024-position window.
const char* kGemma3_1B = R"({
  "architectures": ["Gemma3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "attn_logit_softcapping": null, "bos_token_id": 2, "cache_implementation": "hybrid", "eos_token_id": [1, 106],
  "final_logit_softcapping": null, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152,
  "initializer_range": 0.02, "intermediate_size": 6912, "max_position_embeddings": 32768, "model_type": "gemma3_text",
  "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1, "pad_token_id": 0,
  "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000, "rope_scaling": null,
  "rope_theta": 1000000, "sliding_window": 512, "sliding_window_pattern": 6, "torch_dtype": "bfloat16",
  "transformers_version": "4.50.0.dev0", "use_cache": true, "vocab_size": 262144})";

TEST_CASE("config.json of Gemma 3 1B, and the text part of 4B", "[hf_config]") {
  const HfModelConfig hf = parse_hf_config(kGemma3_1B, "config.json");
  const ModelConfig& c = hf.config;
  CHECK(hf.architecture == HfArchitecture::Gemma3);
  CHECK(hf.tie_word_embeddings);  // Gemma3TextConfig's default
  CHECK(c.head_dim() == 256);
  CHECK(c.q_dim() == 1024);
  CHECK(c.options.qk_norm);
  CHECK(c.options.norm_unit_offset);
  CHECK(c.options.sandwich_norms);
  CHECK(c.options.gelu_tanh);
  CHECK(c.options.scaled_embedding);
  CHECK(c.sliding_window == 512);
  REQUIRE(c.sliding_layers.size() == 26);
  for (int l = 0; l < 26; ++l) CHECK(c.sliding(l) == ((l + 1) % 6 != 0));  // layers 5, 11, 17, 23 full
  CHECK(c.sliding_rope_theta == 10000.0f);
  CHECK(c.rope_theta == 1e6f);
  CHECK(!c.rope_scaling.enabled());
  CHECK(c.query_pre_attn_scalar == 256.0f);
  CHECK(c.final_logit_softcap == 0.0f);
  CHECK(hf.eos_token_ids == std::vector<int>{1, 106});
  const auto four = parse_hf_config(edited(kGemma3_1B,
                                           [](auto& j) {
                                             j["hidden_size"] = 2560;
                                             j["num_hidden_layers"] = 34;
                                             j["num_attention_heads"] = 8;
                                             j["num_key_value_heads"] = 4;
                                             j["sliding_window"] = 1024;
                                             j["max_position_embeddings"] = 131072;
                                             j["rope_scaling"] = {{"factor", 8.0}, {"rope_type", "linear"}};
                                           }),
                                    "c");
  CHECK(four.config.sliding_window == 1024);
  CHECK(four.config.rope_scaling.kind == RopeScalingKind::Linear);
  CHECK(four.config.rope_scaling.factor == 8.0f);
  // layer_types decide when present; Gemma 2's attention soft cap is named.
  const auto typed = parse_hf_config(edited(kGemma3_1B,
                                            [](auto& j) {
                                              j["num_hidden_layers"] = 2;
                                              j["layer_types"] = {"full_attention", "sliding_attention"};
                                            }),
                                     "c");
  CHECK(typed.config.sliding_layers == std::vector<bool>{false, true});
  CHECK_THROWS_WITH(parse_hf_config(edited(kGemma3_1B, [](auto& j) { j["attn_logit_softcapping"] = 50.0; }), "c"),
                    Catch::Contains("attention soft-capping"));
  CHECK_THROWS_WITH(parse_hf_config(edited(kGemma3_1B, [](auto& j) { j["hidden_activation"] = "silu"; }), "c"),
                    Catch::Contains("Gemma3ForCausalLM supports only 'gelu_pytorch_tanh'"));
}

// google/gemma-3-4b-it's config.json (transformers 4.50): Gemma3ForConditionalGeneration,
// its text model's fields under text_config, most left to Gemma3TextConfig's
// defaults; the vision tower's config (abridged) is not read.
const char* kGemma3_4B = R"({
  "architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999, "eoi_token_index": 256000,
  "eos_token_id": [1, 106], "image_token_index": 262144, "initializer_range": 0.02, "mm_tokens_per_image": 256,
  "model_type": "gemma3",
  "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
                  "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                  "sliding_window": 1024},
  "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0",
  "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                    "model_type": "siglip_vision_model", "num_attention_heads": 16, "num_hidden_layers": 27,
                    "patch_size": 14, "vision_use_head": false}})";

TEST_CASE("config.json of Gemma 3 4B (image and text): its text model, with Gemma3TextConfig's defaults",
          "[hf_config]") {
  // The 4B's text model as llama.cpp's converter writes it (gemma3.block_count
  // 34, embedding_length 2560, feed_forward_length 10240, head_count 8,
  // head_count_kv 4, key_length 256, context_length 131072, rope.freq_base
  // 1e6, rope.scaling.factor 8, attention.sliding_window 1024).
  const HfModelConfig hf = parse_hf_config(kGemma3_4B, "config.json");
  const ModelConfig& c = hf.config;
  CHECK(hf.architecture == HfArchitecture::Gemma3);
  CHECK(hf.multimodal_text);
  CHECK(hf.tie_word_embeddings);
  CHECK(hf.torch_dtype == "bfloat16");
  CHECK(c.dim == 2560);
  CHECK(c.n_layers == 34);
  CHECK(c.hidden_dim == 10240);
  CHECK(c.n_heads == 8);
  CHECK(c.n_kv_heads == 4);
  CHECK(c.head_dim() == 256);
  CHECK(c.vocab_size == 262208);
  CHECK(c.max_seq_len == 131072);
  CHECK(c.norm_eps == 1e-6f);
  CHECK(c.rope_theta == 1e6f);
  CHECK(c.rope_scaling.kind == RopeScalingKind::Linear);
  CHECK(c.rope_scaling.factor == 8.0f);
  CHECK(c.sliding_rope_theta == 10000.0f);
  CHECK(c.sliding_window == 1024);
  for (int l = 0; l < 34; ++l) CHECK(c.sliding(l) == ((l + 1) % 6 != 0));
  CHECK(c.query_pre_attn_scalar == 256.0f);
  CHECK(c.options.gelu_tanh);
  CHECK(c.options.sandwich_norms);
  CHECK(hf.eos_token_ids == std::vector<int>{1, 106});  // the outer config's
  CHECK(hf.bos_token_id == 2);                          // text_config's default
  // text_config's own fields win over the outer config's; a bad one is named.
  const auto own = parse_hf_config(edited(kGemma3_4B, [](auto& j) { j["text_config"]["eos_token_id"] = 106; }), "c");
  CHECK(own.eos_token_ids == std::vector<int>{106});
  CHECK_THROWS_WITH(parse_hf_config(edited(kGemma3_4B, [](auto& j) { j["text_config"]["num_hidden_layers"] = 0; }), "c"),
                    Catch::Contains("text_config.num_hidden_layers"));
  CHECK_THROWS_WITH(parse_hf_config(edited(kGemma3_4B, [](auto& j) { j["text_config"] = 3; }), "c"),
                    Catch::Contains("text_config"));
  CHECK_FALSE(parse_hf_config(kGemma3_1B, "c").multimodal_text);
}

// openai/gpt-oss-20b's config.json as published, less its
// quantization_config (the MXFP4 expert blocks: test_hf_folder.cpp).
const char* kGptOss20B = R"({
  "architectures": ["GptOssForCausalLM"], "attention_bias": true, "attention_dropout": 0.0,
  "eos_token_id": 200002, "experts_per_token": 4, "head_dim": 64, "hidden_act": "silu", "hidden_size": 2880,
  "initial_context_length": 4096, "initializer_range": 0.02, "intermediate_size": 2880,
  "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention",
                  "sliding_attention", "full_attention", "sliding_attention", "full_attention",
                  "sliding_attention", "full_attention", "sliding_attention", "full_attention",
                  "sliding_attention", "full_attention", "sliding_attention", "full_attention",
                  "sliding_attention", "full_attention", "sliding_attention", "full_attention",
                  "sliding_attention", "full_attention", "sliding_attention", "full_attention"],
  "max_position_embeddings": 131072, "model_type": "gpt_oss", "num_attention_heads": 64,
  "num_experts_per_tok": 4, "num_hidden_layers": 24, "num_key_value_heads": 8, "num_local_experts": 32,
  "output_router_logits": false, "pad_token_id": 199999, "rms_norm_eps": 1e-05,
  "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0, "original_max_position_embeddings": 4096,
                   "rope_type": "yarn", "truncate": false},
  "rope_theta": 150000, "router_aux_loss_coef": 0.9, "sliding_window": 128, "swiglu_limit": 7.0,
  "tie_word_embeddings": false, "transformers_version": "4.55.0.dev0", "use_cache": true, "vocab_size": 201088})";

TEST_CASE("config.json of gpt-oss-20b", "[hf_config]") {
  const HfModelConfig hf = parse_hf_config(kGptOss20B, "c");
  const ModelConfig& c = hf.config;
  CHECK(hf.architecture == HfArchitecture::GptOss);
  CHECK(c.dim == 2880);
  CHECK(c.n_layers == 24);
  CHECK(c.n_heads == 64);
  CHECK(c.n_kv_heads == 8);
  CHECK(c.head_dim() == 64);
  CHECK(c.q_dim() == 4096);  // wider than the residual stream
  CHECK(c.options == architecture_options(HfArchitecture::GptOss));
  CHECK(c.moe.n_experts == 32);
  CHECK(c.moe.n_experts_used == 4);
  CHECK(c.moe.expert_hidden_dim == 2880);
  CHECK(c.moe.routing == ExpertRouting::TopKSoftmax);
  CHECK(c.moe.swiglu_limit == 7.0f);
  CHECK(c.sliding_window == 128);
  REQUIRE(c.sliding_layers.size() == 24);
  for (size_t l = 0; l < 24; ++l) CHECK(c.sliding_layers[l] == (l % 2 == 0));
  CHECK(c.rope_theta == 150000.0f);
  CHECK(c.rope_scaling.kind == RopeScalingKind::Yarn);
  CHECK(!c.rope_scaling.truncate);
  CHECK(!hf.tie_word_embeddings);
  CHECK(hf.eos_token_ids == std::vector<int>{200002});
  // Without layer_types, GptOssConfig's default: even layers slide. Without
  // swiglu_limit, its default 7.
  const auto defaults = parse_hf_config(edited(kGptOss20B, [](auto& j) {
                                          j.erase("layer_types");
                                          j.erase("swiglu_limit");
                                        }),
                                        "c");
  CHECK(defaults.config.sliding_layers == c.sliding_layers);
  CHECK(defaults.config.moe.swiglu_limit == 7.0f);
  CHECK_THROWS_WITH(parse_hf_config(edited(kGptOss20B, [](auto& j) { j["swiglu_limit"] = 0; }), "c"),
                    Contains("swiglu_limit"));
  // The published file's quantization_config: MXFP4 experts, gpt-oss only.
  CHECK(!hf.mxfp4_experts);
  const auto mxfp4 = [](auto& j) {
    j["quantization_config"] = {{"modules_to_not_convert", {"model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                            "model.embed_tokens", "lm_head"}},
                                {"quant_method", "mxfp4"}};
  };
  CHECK(parse_hf_config(edited(kGptOss20B, mxfp4), "c").mxfp4_experts);
  CHECK_THROWS_WITH(parse_hf_config(edited(kLlama32_1B, mxfp4), "c"), Contains("quant_method mxfp4"));
}

TEST_CASE("config.json's YaRN (gpt-oss) and linear (Gemma 3) RoPE scaling", "[hf_config]") {
  // openai/gpt-oss-20b's rope_scaling, on a Llama config.
  const auto yarn = parse_hf_config(edited(kLlama32_1B,
                                           [](auto& j) {
                                             j["rope_scaling"] = {{"beta_fast", 32.0},
                                                                  {"beta_slow", 1.0},
                                                                  {"factor", 32.0},
                                                                  {"original_max_position_embeddings", 4096},
                                                                  {"rope_type", "yarn"},
                                                                  {"truncate", false}};
                                           }),
                                    "c");
  const RopeScaling& r = yarn.config.rope_scaling;
  CHECK(r.kind == RopeScalingKind::Yarn);
  CHECK(r.factor == 32.0f);
  CHECK(r.original_context == 4096);
  CHECK(r.beta_fast == 32.0f);
  CHECK(r.beta_slow == 1.0f);
  CHECK(!r.truncate);
  CHECK(r.attention_factor == 0.0f);  // transformers' default, 0.1 ln 32 + 1
  // Left out: transformers' defaults (betas 32 and 1, truncate true, the
  // original context max_position_embeddings).
  const auto bare = parse_hf_config(
      edited(kLlama32_1B, [](auto& j) { j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}, {"attention_factor", 1.2}}; }),
      "c");
  CHECK(bare.config.rope_scaling.beta_fast == 32.0f);
  CHECK(bare.config.rope_scaling.beta_slow == 1.0f);
  CHECK(bare.config.rope_scaling.truncate);
  CHECK(bare.config.rope_scaling.original_context == bare.config.max_seq_len);
  CHECK(bare.config.rope_scaling.attention_factor == 1.2f);
  // google/gemma-3-4b-it's text rope_scaling.
  const auto linear = parse_hf_config(
      edited(kLlama32_1B, [](auto& j) { j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 8.0}}; }), "c");
  CHECK(linear.config.rope_scaling.kind == RopeScalingKind::Linear);
  CHECK(linear.config.rope_scaling.factor == 8.0f);
}

TEST_CASE("config.json of Mistral 7B v0.3 and v0.1, and Qwen's sliding windows", "[hf_config]") {
  const HfModelConfig v3 = parse_hf_config(kMistral7B_v03, "config.json");
  CHECK(v3.architecture == HfArchitecture::Mistral);
  CHECK(v3.config.dim == 4096);
  CHECK(v3.config.vocab_size == 32768);
  CHECK(v3.config.max_seq_len == 32768);
  CHECK(v3.config.sliding_window == 0);
  CHECK(!v3.tie_word_embeddings);
  CHECK(!v3.config.options.qkv_bias);
  const HfModelConfig v1 = parse_hf_config(kMistral7B_v01, "config.json");
  CHECK(v1.config.sliding_window == 4096);  // every layer attends over the last 4096 positions
  CHECK(v1.config.sliding_layers.empty());
  CHECK(v1.config.max_seq_len == 32768);  // the context is not capped at the window
  CHECK(v1.config.sliding(0));
  CHECK(v1.config.rope_theta == 10000.0f);
  // A window at least as long as the context changes nothing.
  const auto wide = parse_hf_config(edited(kMistral7B_v01, [](auto& j) { j["sliding_window"] = 32768; }), "c");
  CHECK(wide.config.max_seq_len == 32768);
  CHECK(wide.config.sliding_window == 0);
  // Qwen's window applies only with use_sliding_window, and then (without
  // layer_types) to the layers from max_window_layers on.
  const auto qwen = parse_hf_config(edited(kQwen25_05B, [](auto& j) {
                                      j["use_sliding_window"] = true;
                                      j["sliding_window"] = 4096;
                                      j["max_window_layers"] = 21;
                                    }), "c");
  CHECK(qwen.config.max_seq_len == 32768);
  CHECK(qwen.config.sliding_window == 4096);
  REQUIRE(qwen.config.sliding_layers.size() == 24);
  CHECK(!qwen.config.sliding(20));
  CHECK(qwen.config.sliding(21));
  // max_window_layers at or past the last layer: no layer slides.
  const auto none = parse_hf_config(edited(kQwen25_05B, [](auto& j) {
                                      j["use_sliding_window"] = true;
                                      j["sliding_window"] = 4096;
                                      j["max_window_layers"] = 24;
                                    }), "c");
  CHECK(none.config.sliding_window == 0);
  // layer_types, when given, decide; a malformed one is named.
  const auto typed = parse_hf_config(edited(kMistral7B_v01, [](auto& j) {
                                       j["num_hidden_layers"] = 3;
                                       j["layer_types"] = {"sliding_attention", "full_attention", "sliding_attention"};
                                     }), "c");
  CHECK(typed.config.sliding_layers == std::vector<bool>{true, false, true});
  CHECK_THROWS_WITH(parse_hf_config(edited(kMistral7B_v01, [](auto& j) { j["layer_types"] = {"sliding_attention"}; }), "c"),
                    Catch::Contains("layer_types"));
  CHECK_THROWS_WITH(parse_hf_config(edited(kMistral7B_v01,
                                           [](auto& j) {
                                             j["num_hidden_layers"] = 1;
                                             j["layer_types"] = {"chunked_attention"};
                                           }),
                                    "c"),
                    Catch::Contains("chunked_attention"));
}

TEST_CASE("config.json: defaults and transformers 5's rope_parameters", "[hf_config]") {
  // num_key_value_heads absent: as many as the query heads; tie_word_embeddings absent: false.
  const auto mha = parse_hf_config(edited(kMistral7B_v03, [](auto& j) {
                                     j.erase("num_key_value_heads");
                                     j.erase("tie_word_embeddings");
                                     j.erase("torch_dtype");
                                   }), "c");
  CHECK(mha.config.n_kv_heads == 32);
  CHECK(!mha.tie_word_embeddings);
  CHECK(mha.torch_dtype.empty());
  const auto v5 = parse_hf_config(edited(kLlama32_1B, [](auto& j) {
                                    j["rope_parameters"] = j["rope_scaling"];
                                    j["rope_parameters"]["rope_theta"] = 500000.0;
                                    j.erase("rope_scaling");
                                    j.erase("rope_theta");
                                    j.erase("torch_dtype");
                                    j["dtype"] = "bfloat16";
                                  }), "c");
  CHECK(v5.config.rope_theta == 500000.0f);
  CHECK(v5.config.rope_scaling.factor == 32.0f);
  CHECK(v5.torch_dtype == "bfloat16");
  const auto plain = parse_hf_config(edited(kLlama32_1B, [](auto& j) {
                                       j["rope_scaling"] = {{"rope_type", "default"}};
                                     }), "c");
  CHECK(!plain.config.rope_scaling.enabled());
}

TEST_CASE("config.json: transformers 5's rope_parameters per layer type (Gemma 3)", "[hf_config]") {
  // Gemma 3 4B's text config as transformers 5 writes it: no rope_theta,
  // rope_scaling or rope_local_base_freq, one entry per layer type. The
  // model read must be the 4.x form's, field for field.
  const auto v4_form = [](auto& j) {
    j["sliding_window"] = 1024;
    j["rope_scaling"] = {{"factor", 8.0}, {"rope_type", "linear"}};
  };
  const auto v5_form = [&](auto& j) {
    v4_form(j);
    j.erase("rope_scaling");
    j.erase("rope_theta");
    j.erase("rope_local_base_freq");
    j["rope_parameters"] = {
        {"full_attention", {{"rope_type", "linear"}, {"factor", 8.0}, {"rope_theta", 1000000.0}}},
        {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}}};
  };
  const ModelConfig v4 = parse_hf_config(edited(kGemma3_1B, v4_form), "c").config;
  const ModelConfig v5 = parse_hf_config(edited(kGemma3_1B, v5_form), "c").config;
  CHECK(v5.rope_theta == 1e6f);
  CHECK(v5.rope_scaling.kind == RopeScalingKind::Linear);
  CHECK(v5.rope_scaling.factor == 8.0f);
  CHECK(v5.sliding_rope_theta == 10000.0f);
  CHECK(v5.rope_theta == v4.rope_theta);
  CHECK(v5.rope_scaling == v4.rope_scaling);
  CHECK(v5.sliding_rope_theta == v4.sliding_rope_theta);
  CHECK(v5.sliding_layers == v4.sliding_layers);
  // A sliding base of its own is read, not Gemma's 10000 default.
  const auto own_base = parse_hf_config(edited(kGemma3_1B,
                                               [&](auto& j) {
                                                 v5_form(j);
                                                 j["rope_parameters"]["sliding_attention"]["rope_theta"] = 20000.0;
                                               }),
                                        "c");
  CHECK(own_base.config.sliding_rope_theta == 20000.0f);
  // Both layer types alike: one RoPE for every layer (the sliding layers scaled too).
  const auto alike = parse_hf_config(edited(kGemma3_1B,
                                            [&](auto& j) {
                                              v5_form(j);
                                              j["rope_parameters"]["sliding_attention"] =
                                                  j["rope_parameters"]["full_attention"];
                                            }),
                                     "c");
  CHECK(alike.config.sliding_rope_theta == 0.0f);
  CHECK(alike.config.rope_scaling.factor == 8.0f);
  // Scaling of the sliding layers' own, which AstrAI's layers cannot hold, is refused by name; so is a missing base.
  CHECK_THROWS_WITH(parse_hf_config(edited(kGemma3_1B,
                                           [&](auto& j) {
                                             v5_form(j);
                                             j["rope_parameters"]["sliding_attention"]["rope_type"] = "linear";
                                             j["rope_parameters"]["sliding_attention"]["factor"] = 2.0;
                                           }),
                                    "c"),
                    Catch::Contains("rope_parameters.sliding_attention"));
  CHECK_THROWS_WITH(parse_hf_config(edited(kGemma3_1B,
                                           [&](auto& j) {
                                             v5_form(j);
                                             j["rope_parameters"]["full_attention"].erase("rope_theta");
                                           }),
                                    "c"),
                    Catch::Contains("\"rope_parameters.full_attention.rope_theta\" is missing"));
  CHECK_THROWS_WITH(parse_hf_config(edited(kGemma3_1B,
                                           [&](auto& j) {
                                             v5_form(j);
                                             j["rope_parameters"]["linear_attention"] = {{"rope_type", "default"}};
                                           }),
                                    "c"),
                    Catch::Contains("linear_attention"));
}

TEST_CASE("config.json: bad values are refused naming the field", "[hf_config]") {
  using J = nlohmann::json;
  auto with = [](const char* fixture, const std::function<void(J&)>& edit) { return config_error(edited(fixture, edit)); };
  CHECK(config_error(kLlama32_1B).empty());
  CHECK_THAT(config_error("{\"architectures\": "), Contains("not valid JSON"));
  CHECK_THAT(config_error("[]"), Contains("not a JSON object"));
  CHECK_THAT(with(kLlama32_1B, [](J& j) { j.erase("architectures"); }), Contains("\"architectures\" is missing"));
  CHECK_THAT(with(kLlama32_1B, [](J& j) { j["architectures"] = J::array({"GPT2LMHeadModel"}); }),
             Contains("names 'GPT2LMHeadModel', which is not supported"));
  CHECK_THAT(with(kLlama32_1B, [](J& j) { j["architectures"] = J::array(); }), Contains("\"architectures\" is []"));
  for (const char* field : {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "vocab_size",
                            "max_position_embeddings", "rms_norm_eps", "rope_theta"}) {
    INFO(field);
    CHECK_THAT(with(kLlama32_1B, [&](J& j) { j.erase(field); }), Contains(std::string("\"") + field + "\" is missing"));
  }
  CHECK_THAT(with(kLlama32_1B, [](J& j) { j["hidden_size"] = "2048"; }), Contains("\"hidden_size\" is \"2048\", expected an integer"));
  CHECK_THAT(with(kLlama32_1B, [](J& j) { j["hidden_size"] = 2048.5; }), Contains("\"hidden_size\" is 2048.5, expected an integer"));
  CHECK_THAT(with(kLlama32_1B, [](J& j) { j["num_hidden_layers"] = 0; }), Contains("\"num_hidden_layers\" is 0, expected a positive"));
  CHECK_THAT(with(kLlama32_1B, [](J& j) { j["vocab_size"] = 4294967296; }), Contains("\"vocab_size\" is 4294967296"));
  CHECK_THAT(with(kLlama32_1B, [](J& j) { j["rms_norm_eps"] = "small"; }), Contains("\"rms_norm_eps\" is \"small\", expected a number"));
  CHECK_THAT(with(kLlama32_1B, [](J& j) { j["tie_word_embeddings"] = 1; }), Contains("\"tie_word_embeddings\" is 1, expected true or false"));
  // Options the forward pass does not have.
  CHECK_THAT(with(kLlama32_1B, [](J& j) { j["rope_scaling"]["rope_type"] = "longrope"; }),
             Contains("\"rope_scaling.rope_type\" is 'longrope'; only 'llama3', 'linear' and 'yarn' RoPE scaling"));
  CHECK_THAT(with(kLlama32_1B, [](J& j) { j["rope_scaling"] = {{"type", "dynamic"}, {"factor", 2.0}}; }),
             Contains("is 'dynamic'; only 'llama3'"));
  CHECK_THAT(with(kLlama32_1B, [](J& j) { j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 40.0}, {"mscale", 1.0}}; }),
             Contains("\"rope_scaling.mscale\" is set; YaRN's DeepSeek magnitudes are not supported"));
  CHECK_THAT(with(kLlama32_1B, [](J& j) { j["rope_scaling"].erase("low_freq_factor"); }),
             Contains("\"rope_scaling.low_freq_factor\" is missing"));
  CHECK_THAT(with(kLlama32_1B, [](J& j) { j["rope_scaling"]["factor"] = 0.5; }), Contains("rope_scaling.factor must be at least 1"));
  CHECK_THAT(with(kLlama32_1B, [](J& j) { j["rope_scaling"] = "llama3"; }), Contains("\"rope_scaling\" is \"llama3\", expected null or an object"));
  CHECK_THAT(with(kLlama32_1B, [](J& j) { j["hidden_act"] = "gelu"; }), Contains("\"hidden_act\" is 'gelu'; LlamaForCausalLM supports only 'silu'"));
  CHECK_THAT(with(kLlama32_1B, [](J& j) { j["attention_bias"] = true; }), Contains("\"attention_bias\" is true"));
  CHECK_THAT(with(kQwen3_06B, [](J& j) { j["attention_bias"] = true; }), Contains("\"attention_bias\" is true"));
  CHECK_THAT(with(kLlama32_1B, [](J& j) { j["mlp_bias"] = true; }), Contains("\"mlp_bias\" is true"));
  CHECK_THAT(with(kLlama32_1B, [](J& j) { j["quantization_config"] = {{"quant_method", "gptq"}}; }),
             Contains("quantized checkpoints are not supported"));
  CHECK_THAT(with(kLlama32_1B, [](J& j) { j["torch_dtype"] = "float8_e4m3fn"; }), Contains("\"torch_dtype\" is 'float8_e4m3fn'"));
  CHECK_THAT(with(kQwen3_06B, [](J& j) { j.erase("head_dim"); }), Contains("\"head_dim\" is missing"));
  // Values ModelConfig::validate refuses.
  CHECK_THAT(with(kLlama31_8B, [](J& j) { j["num_key_value_heads"] = 5; }), Contains("n_heads is not a multiple of n_kv_heads"));
  CHECK_THAT(with(kLlama31_8B, [](J& j) { j["hidden_size"] = 4095; }), Contains("dim is not a multiple of n_heads"));
  CHECK_THAT(with(kLlama31_8B, [](J& j) { j["rms_norm_eps"] = 0; }), Contains("norm_eps must be positive"));
  CHECK_THAT(with(kLlama32_1B, [](J& j) { j["head_dim"] = 63; }), Contains("head_dim must be even"));
  // Token ids outside the vocabulary.
  CHECK_THAT(with(kLlama32_1B, [](J& j) { j["eos_token_id"] = 128256; }), Contains("\"eos_token_id\" holds token id 128256, outside"));
  CHECK_THAT(with(kLlama32_1B, [](J& j) { j["bos_token_id"] = -1; }), Contains("\"bos_token_id\" holds token id -1"));
}

TEST_CASE("generation_config.json: EOS lists and sampling defaults", "[hf_config]") {
  // meta-llama/Llama-3.2-1B-Instruct's and Qwen/Qwen3-0.6B's.
  const auto llama = parse_hf_generation_config(
      R"({"bos_token_id": 128000, "do_sample": true, "eos_token_id": [128001, 128008, 128009],
          "temperature": 0.6, "top_p": 0.9, "transformers_version": "4.45.0.dev0"})", "g", 128256);
  CHECK(llama.eos_token_ids == std::vector<int>{128001, 128008, 128009});
  CHECK(llama.bos_token_id == 128000);
  CHECK(llama.do_sample == true);
  CHECK(llama.temperature == 0.6f);
  CHECK(llama.top_p == 0.9f);
  CHECK(!llama.top_k);
  const auto qwen = parse_hf_generation_config(
      R"({"bos_token_id": 151643, "do_sample": true, "eos_token_id": [151645, 151643], "pad_token_id": 151643,
          "temperature": 0.6, "top_k": 20, "top_p": 0.95, "transformers_version": "4.51.0"})", "g", 151936);
  CHECK(qwen.eos_token_ids == std::vector<int>{151645, 151643});
  CHECK(qwen.top_k == 20);
  CHECK(qwen.top_p == 0.95f);
  const auto bare = parse_hf_generation_config(R"({"eos_token_id": 2, "temperature": 1})", "g", 32000);
  CHECK(bare.eos_token_ids == std::vector<int>{2});
  CHECK(bare.temperature == 1.0f);
  CHECK(!bare.bos_token_id);
  CHECK(!bare.do_sample);
  CHECK(!bare.max_new_tokens);
  // max_new_tokens (e.g. google/gemma-3's files have none; vLLM reads it as the default max_tokens).
  const auto capped = parse_hf_generation_config(R"({"eos_token_id": 2, "max_new_tokens": 2048})", "g", 32000);
  CHECK(capped.max_new_tokens == 2048);
  CHECK(parse_hf_generation_config(hf_generation_config_json(capped), "g", 32000).max_new_tokens == 2048);
  auto error = [](const std::string& text) {
    try {
      (void)parse_hf_generation_config(text, "g.json", 100);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(error(R"({"temperature": -0.5})"), Contains("g.json: \"temperature\" is negative"));
  CHECK_THAT(error(R"({"top_p": 0})"), Contains("\"top_p\" is 0, expected a number in (0, 1]"));
  CHECK_THAT(error(R"({"top_p": 1.5})"), Contains("\"top_p\" is 1.5"));
  CHECK_THAT(error(R"({"top_k": -1})"), Contains("\"top_k\" is -1, expected 0 or more"));
  CHECK_THAT(error(R"({"top_k": 2.5})"), Contains("\"top_k\" is 2.5, expected an integer"));
  CHECK_THAT(error(R"({"eos_token_id": [1, "2"]})"), Contains("\"eos_token_id\" is \"2\", expected an integer"));
  CHECK_THAT(error(R"({"eos_token_id": 100})"), Contains("\"eos_token_id\" holds token id 100, outside the vocabulary [0, 100)"));
  CHECK_THAT(error(R"({"do_sample": "yes"})"), Contains("\"do_sample\" is \"yes\""));
  CHECK_THAT(error(R"({"max_new_tokens": 0})"), Contains("\"max_new_tokens\" is 0, expected 1 or more"));
  CHECK_THAT(error("nope"), Contains("g.json: not valid JSON"));
  // And written back.
  const auto again = parse_hf_generation_config(hf_generation_config_json(qwen), "g", 151936);
  CHECK(again.eos_token_ids == qwen.eos_token_ids);
  CHECK(again.bos_token_id == qwen.bos_token_id);
  CHECK(again.do_sample == qwen.do_sample);
  CHECK(again.temperature == qwen.temperature);
  CHECK(again.top_p == qwen.top_p);
  CHECK(again.top_k == qwen.top_k);
}

TEST_CASE("config.json of Mixture-of-Experts models: Qwen 3 30B-A3B, Mixtral 8x7B, Qwen 1.5 MoE", "[hf_config]") {
  const HfModelConfig q3 = parse_hf_config(kQwen3_30B_A3B, "q3");
  CHECK(q3.architecture == HfArchitecture::Qwen3Moe);
  CHECK(q3.config.options == LayerOptions{.qk_norm = true, .moe = MoeModule::Mlp});
  CHECK(q3.config.moe == MoeConfig{.n_experts = 128, .n_experts_used = 8, .expert_hidden_dim = 768,
                                   .norm_topk_prob = true});
  CHECK(q3.config.hidden_dim == 6144);
  CHECK(q3.config.head_dim() == 128);
  const HfModelConfig mx = parse_hf_config(kMixtral_8x7B, "mx");
  CHECK(mx.architecture == HfArchitecture::Mixtral);
  CHECK(mx.config.options == LayerOptions{.moe = MoeModule::BlockSparseMoe});
  CHECK(mx.config.moe == MoeConfig{.n_experts = 8, .n_experts_used = 2, .expert_hidden_dim = 14336,
                                   .norm_topk_prob = true});
  CHECK(mx.config.max_seq_len == 32768);  // sliding_window null: no cap
  const HfModelConfig q2 = parse_hf_config(kQwen15_MoE_A27B, "q2");
  CHECK(q2.architecture == HfArchitecture::Qwen2Moe);
  CHECK(q2.config.options == LayerOptions{.qkv_bias = true, .moe = MoeModule::Mlp, .shared_expert = true});
  CHECK(q2.config.moe == MoeConfig{.n_experts = 60, .n_experts_used = 4, .expert_hidden_dim = 1408,
                                   .norm_topk_prob = false, .shared_expert_hidden_dim = 5632});
  for (int l = 0; l < 24; ++l) CHECK(q2.config.moe.sparse(l));

  // Dense layers: decoder_sparse_step and mlp_only_layers, as transformers' Qwen MoE reads them.
  auto with = [](const char* json, const std::string& key, const nlohmann::json& value) {
    auto j = nlohmann::json::parse(json);
    j[key] = value;
    return j.dump();
  };
  const auto stepped = parse_hf_config(with(kQwen3_30B_A3B, "decoder_sparse_step", 2), "s").config;
  CHECK(!stepped.moe.sparse(0));
  CHECK(stepped.moe.sparse(1));
  const auto only = parse_hf_config(with(kQwen3_30B_A3B, "mlp_only_layers", {0, 47}), "o").config;
  CHECK(!only.moe.sparse(0));
  CHECK(only.moe.sparse(1));
  CHECK(!only.moe.sparse(47));

  // Bad values: named, never a crash.
  auto error = [](const std::string& json) {
    try {
      parse_hf_config(json, "moe.json");
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(error(with(kQwen3_30B_A3B, "num_experts_per_tok", 129)),
             Contains("moe.n_experts_used (129) must lie in [1, n_experts = 128]"));
  CHECK_THAT(error(with(kQwen3_30B_A3B, "mlp_only_layers", {48})),
             Contains("\"mlp_only_layers\" names layer 48; the model has 48"));
  CHECK_THAT(error(with(kQwen3_30B_A3B, "mlp_only_layers", "all")), Contains("expected a list of layer indices"));
  CHECK_THAT(error(with(kMixtral_8x7B, "num_local_experts", nullptr)), Contains("\"num_local_experts\" is missing"));
  CHECK_THAT(error(with(kQwen15_MoE_A27B, "shared_expert_intermediate_size", 0)),
             Contains("\"shared_expert_intermediate_size\" is 0"));
  CHECK_THAT(error(with(kQwen3_30B_A3B, "decoder_sparse_step", 0)), Contains("\"decoder_sparse_step\" is 0"));
}

TEST_CASE("config.json written for a ModelConfig reads back to it", "[hf_config]") {
  rc::prop("every architecture", [] {
    const auto arch = *rc::gen::element(HfArchitecture::Llama, HfArchitecture::Mistral, HfArchitecture::Qwen2,
                                        HfArchitecture::Qwen3, HfArchitecture::Mixtral, HfArchitecture::Qwen2Moe,
                                        HfArchitecture::Qwen3Moe, HfArchitecture::Gemma3, HfArchitecture::GptOss);
    ModelConfig c;
    c.n_kv_heads = *rc::gen::inRange(1, 5);
    c.n_heads = c.n_kv_heads * *rc::gen::inRange(1, 4);
    const int head = 2 * *rc::gen::inRange(1, 40);
    c.dim = c.n_heads * head;
    c.hidden_dim = *rc::gen::inRange(1, 100000);
    c.n_layers = *rc::gen::inRange(1, 100);
    c.vocab_size = *rc::gen::inRange(1, 300000);
    c.max_seq_len = *rc::gen::inRange(1, 1 << 20);
    c.rope_theta = *rc::gen::element(10000.0f, 500000.0f, 1e6f, 1234.567f);
    c.norm_eps = *rc::gen::element(1e-5f, 1e-6f, 3.3e-7f);
    c.rope_layout = RopeLayout::RotateHalf;
    if (architecture(arch).head_dim_required || *rc::gen::arbitrary<bool>())
      c.explicit_head_dim = 2 * *rc::gen::inRange(1, 80);
    c.options = architecture_options(arch);
    if (c.options.moe != MoeModule::None) {
      c.moe.n_experts = *rc::gen::inRange(1, 300);
      c.moe.n_experts_used = *rc::gen::inRange(1, c.moe.n_experts + 1);
      if (arch == HfArchitecture::Mixtral) {
        c.moe.expert_hidden_dim = c.hidden_dim;  // Mixtral's experts are intermediate_size wide,
        c.moe.norm_topk_prob = true;             // always renormalised, in every layer
      } else if (arch == HfArchitecture::GptOss) {
        c.moe.expert_hidden_dim = c.hidden_dim;  // gpt-oss's too, in every layer, top-k then softmax
        c.moe.routing = ExpertRouting::TopKSoftmax;
        c.moe.swiglu_limit = *rc::gen::element(7.0f, 10.5f);
      } else {
        c.moe.expert_hidden_dim = *rc::gen::inRange(1, 5000);
        c.moe.norm_topk_prob = *rc::gen::arbitrary<bool>();
        c.moe.sparse_step = *rc::gen::inRange(1, 4);
        if (*rc::gen::arbitrary<bool>()) c.moe.dense_layers = {0, c.n_layers - 1};
      }
      if (c.options.shared_expert) c.moe.shared_expert_hidden_dim = *rc::gen::inRange(1, 9000);
    }
    if (*rc::gen::arbitrary<bool>()) c.rope_scaling = {.factor = *rc::gen::element(8.0f, 32.0f, 1.5f),
                                                       .low_freq_factor = 1.0f, .high_freq_factor = 4.0f,
                                                       .original_context = *rc::gen::inRange(1, 1 << 16)};
    if (c.rope_scaling.enabled()) {
      c.rope_scaling.kind = *rc::gen::element(RopeScalingKind::Llama3, RopeScalingKind::Linear, RopeScalingKind::Yarn);
      if (c.rope_scaling.kind == RopeScalingKind::Linear) c.rope_scaling = {.factor = c.rope_scaling.factor, .kind = RopeScalingKind::Linear};
      if (c.rope_scaling.kind == RopeScalingKind::Yarn) {
        c.rope_scaling.low_freq_factor = 1.0f, c.rope_scaling.high_freq_factor = 4.0f;  // not YaRN's: the defaults
        c.rope_scaling.beta_fast = *rc::gen::element(32.0f, 16.5f);
        c.rope_scaling.beta_slow = *rc::gen::element(1.0f, 0.25f);
        c.rope_scaling.truncate = *rc::gen::arbitrary<bool>();
        c.rope_scaling.attention_factor = *rc::gen::element(0.0f, 1.25f);
      }
    }
    // A window where the architecture has one: on every layer (Mistral,
    // Mixtral) or on drawn ones (Qwen: layer_types).
    const SlidingWindowRule rule = architecture(arch).sliding_window;
    if (rule != SlidingWindowRule::Never && c.max_seq_len > 1 && *rc::gen::arbitrary<bool>()) {
      c.sliding_window = *rc::gen::inRange(1, c.max_seq_len);
      if (rule != SlidingWindowRule::WhenSet) {
        c.sliding_layers = *rc::gen::container<std::vector<bool>>(size_t(c.n_layers), rc::gen::arbitrary<bool>());
        if (std::find(c.sliding_layers.begin(), c.sliding_layers.end(), true) == c.sliding_layers.end())
          c.sliding_window = 0;  // none slides: no window
        if (c.sliding_window == 0 || std::find(c.sliding_layers.begin(), c.sliding_layers.end(), false) ==
                                         c.sliding_layers.end())
          c.sliding_layers.clear();  // every layer: the same as no list
      }
    }
    if (architecture(arch).gemma_fields) {  // Gemma 3: the sliding layers' base, the query scale, the soft cap
      if (c.sliding_window > 0) c.sliding_rope_theta = *rc::gen::element(10000.0f, 1234.5f);
      c.query_pre_attn_scalar = *rc::gen::element(256.0f, 168.0f, 7.5f);
      if (*rc::gen::arbitrary<bool>()) c.final_logit_softcap = *rc::gen::element(30.0f, 0.5f);
    }
    const bool tied = *rc::gen::arbitrary<bool>();
    const HfModelConfig hf = parse_hf_config(hf_config_json(c, arch, tied, "float16"), "c");
    RC_ASSERT(hf.config.sliding_window == c.sliding_window);
    RC_ASSERT(hf.config.sliding_layers == c.sliding_layers);
    RC_ASSERT(hf.config.sliding_rope_theta == c.sliding_rope_theta);
    RC_ASSERT(hf.config.query_pre_attn_scalar == c.query_pre_attn_scalar);
    RC_ASSERT(hf.config.final_logit_softcap == c.final_logit_softcap);
    RC_ASSERT(hf.architecture == arch);
    RC_ASSERT(hf.tie_word_embeddings == tied);
    RC_ASSERT(hf.torch_dtype == "float16");
    const ModelConfig& r = hf.config;
    RC_ASSERT(r.dim == c.dim && r.hidden_dim == c.hidden_dim && r.n_layers == c.n_layers && r.n_heads == c.n_heads &&
              r.n_kv_heads == c.n_kv_heads && r.vocab_size == c.vocab_size && r.max_seq_len == c.max_seq_len);
    // Floats are written with the shortest decimal that reads back as the same float.
    RC_ASSERT(r.rope_theta == c.rope_theta);
    RC_ASSERT(r.norm_eps == c.norm_eps);
    RC_ASSERT(r.rope_layout == RopeLayout::RotateHalf);
    RC_ASSERT(r.explicit_head_dim == c.explicit_head_dim);
    RC_ASSERT(r.options == c.options);
    RC_ASSERT(r.moe == c.moe);
    RC_ASSERT(r.rope_scaling == c.rope_scaling);
  });
  ModelConfig c;
  c.dim = 8;
  c.hidden_dim = 4;
  c.n_layers = 1;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.vocab_size = 10;
  c.max_seq_len = 4;
  c.rope_layout = RopeLayout::RotateHalf;
  CHECK(nlohmann::json::parse(hf_config_json(c, HfArchitecture::Llama, false, ""))["rms_norm_eps"].dump() == "1e-05");
  CHECK_THROWS_AS(hf_config_json(c, HfArchitecture::Qwen2, false, ""), std::invalid_argument);  // no qkv_bias
  c.rope_layout = RopeLayout::AdjacentPairs;
  CHECK_THROWS_AS(hf_config_json(c, HfArchitecture::Llama, false, ""), std::invalid_argument);
}
