// The architecture rows (see architectures.h). Names: transformers'
// config classes and llama.cpp's LLM_ARCH names; layouts: llama.cpp's
// llama_model_rope_type (LLAMA: NORM, QWEN2/QWEN3/QWEN2MOE/QWEN3MOE: NEOX);
// config.json quirks: transformers' LlamaConfig, MistralConfig, Qwen2Config,
// Qwen3Config, MixtralConfig, Qwen2MoeConfig, Qwen3MoeConfig, Gemma3TextConfig,
// GptOssConfig (llama.cpp: GEMMA3 and OPENAI_MOE are NEOX too); llama.cpp's MoE
// graphs: src/models/llama.cpp, qwen2moe.cpp, qwen3moe.cpp (build_moe_ffn's
// norm_w argument).
#include "engine/model_files/architectures.h"

#include <stdexcept>

namespace astrai {
namespace {

using enum RopeLayout;
using enum MoeModule;

// Qwen MoE's config fields (num_experts, moe_intermediate_size, norm_topk_prob,
// decoder_sparse_step, mlp_only_layers), and Mixtral's.
constexpr MoeFields kQwen2Moe{"num_experts", "moe_intermediate_size", "shared_expert_intermediate_size", true, false};
constexpr MoeFields kQwen3Moe{"num_experts", "moe_intermediate_size", nullptr, true, true};
constexpr MoeFields kMixtral{"num_local_experts", nullptr, nullptr, false, true};
constexpr MoeFields kGptOss{"num_local_experts", nullptr, nullptr, false, false, true};

// clang-format off
constexpr Architecture kArchitectures[] = {
  // id                       hf_name               model_type  gguf_name  gguf_rope_layout  {qkv_bias, qk_norm, moe, shared_expert}
  //   head_dim_required  sliding_window                               config_json_extras  [moe fields, gguf output required]
  {HfArchitecture::Llama,   "LlamaForCausalLM",   "llama",    "llama",   AdjacentPairs,    {false,    false},
     false,             SlidingWindowRule::Never,                    R"({"attention_bias": false, "mlp_bias": false})"},
  {HfArchitecture::Mistral, "MistralForCausalLM", "mistral",  "llama",   AdjacentPairs,    {false,    false},
     false,             SlidingWindowRule::WhenSet,                  R"({"sliding_window": null})"},
  {HfArchitecture::Qwen2,   "Qwen2ForCausalLM",   "qwen2",    "qwen2",   RotateHalf,       {true,     false},
     false,             SlidingWindowRule::WhenUseSlidingWindow,     R"({"use_sliding_window": false})"},
  {HfArchitecture::Qwen3,   "Qwen3ForCausalLM",   "qwen3",    "qwen3",   RotateHalf,       {false,    true},
     true,              SlidingWindowRule::WhenUseSlidingWindow,     R"({"attention_bias": false, "use_sliding_window": false})"},
  {HfArchitecture::Mixtral, "MixtralForCausalLM", "mixtral",  "llama",   AdjacentPairs,    {false,    false, BlockSparseMoe},
     false,             SlidingWindowRule::WhenSet,
     R"({"sliding_window": null, "router_jitter_noise": 0.0, "output_router_logits": false, "router_aux_loss_coef": 0.02})", kMixtral},
  {HfArchitecture::Qwen2Moe, "Qwen2MoeForCausalLM", "qwen2_moe", "qwen2moe", RotateHalf, {true,     false, Mlp, true},
     false,             SlidingWindowRule::WhenUseSlidingWindow,
     R"({"use_sliding_window": false, "output_router_logits": false, "router_aux_loss_coef": 0.001})", kQwen2Moe, true},
  {HfArchitecture::Qwen3Moe, "Qwen3MoeForCausalLM", "qwen3_moe", "qwen3moe", RotateHalf, {false,    true,  Mlp},
     true,              SlidingWindowRule::WhenUseSlidingWindow,
     R"({"attention_bias": false, "use_sliding_window": false, "output_router_logits": false, "router_aux_loss_coef": 0.001})", kQwen3Moe},
  // Gemma 3's text model: q/k norms and Gemma's block (the options after
  // router_bias and attention_sinks: (1 + w) norms, sandwich norms, GeGLU,
  // scaled embedding).
  {HfArchitecture::Gemma3, "Gemma3ForCausalLM", "gemma3_text", "gemma3", RotateHalf,
     {false, true, None, false, false, false, true, true, true, true},
     true,              SlidingWindowRule::Pattern,
     R"({"attention_bias": false, "attn_logit_softcapping": null})", {}, false,
     "hidden_activation", "gelu_pytorch_tanh", true, true},
  // gpt-oss: q/k/v and output biases, a router bias, expert biases, the
  // clamped SwiGLU, attention sinks, every other layer sliding.
  {HfArchitecture::GptOss, "GptOssForCausalLM", "gpt_oss", "gpt-oss", RotateHalf,
     {.qkv_bias = true, .moe = GptOss, .router_bias = true, .attention_sinks = true, .expert_biases = true,
      .out_bias = true},
     true,              SlidingWindowRule::Pattern,
     R"({"attention_bias": true, "output_router_logits": false, "router_aux_loss_coef": 0.9})", kGptOss, true,
     "hidden_act", "silu", false, false, 2},
};
// clang-format on

}  // namespace

std::span<const Architecture> architectures() { return kArchitectures; }

const Architecture& architecture(HfArchitecture id) {
  for (const auto& a : kArchitectures)
    if (a.id == id) return a;
  throw std::logic_error("unknown HfArchitecture");
}

const Architecture* architecture_with_options(const ModelConfig& c) {
  for (const auto& a : kArchitectures)
    if (a.options == c.options) return &a;
  return nullptr;
}

const Architecture* gguf_architecture(const std::string& gguf_name, bool experts) {
  for (const auto& a : kArchitectures)
    if (gguf_name == a.gguf_name && (a.options.moe != MoeModule::None) == experts) return &a;
  return nullptr;
}

std::string hf_architecture_names() {
  std::string out;
  for (const auto& a : kArchitectures) out += (out.empty() ? "" : ", ") + std::string(a.hf_name);
  return out;
}

std::string gguf_architecture_names() {
  std::string out;
  for (const auto& a : kArchitectures) {
    if (a.options.moe != MoeModule::None && gguf_architecture(a.gguf_name, false)) continue;  // "llama" with experts
    if (gguf_architecture(a.gguf_name, a.options.moe != MoeModule::None) != &a) continue;  // named by an earlier row
    out += (out.empty() ? "" : ", ") + std::string(a.gguf_name);
  }
  return out;
}

std::vector<bool> sliding_layers_by_pattern(int n_layers, int pattern) {
  std::vector<bool> sliding(static_cast<size_t>(n_layers), false);
  for (int l = 0; l < n_layers; ++l) sliding[static_cast<size_t>(l)] = (l + 1) % pattern != 0;
  return sliding;
}

}  // namespace astrai
