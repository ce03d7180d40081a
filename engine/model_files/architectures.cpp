// The architecture rows (see architectures.h). Names: transformers'
// config classes and llama.cpp's LLM_ARCH names; layouts: llama.cpp's
// llama_model_rope_type (LLAMA: NORM, QWEN2/QWEN3: NEOX); config.json
// quirks: transformers' LlamaConfig, MistralConfig, Qwen2Config, Qwen3Config.
#include "engine/model_files/architectures.h"

#include <stdexcept>

namespace astrai {
namespace {

using enum RopeLayout;

// clang-format off
constexpr Architecture kArchitectures[] = {
  // id                       hf_name               model_type  gguf_name  gguf_rope_layout  {qkv_bias, qk_norm}
  //   head_dim_required  sliding_window                               config_json_extras
  {HfArchitecture::Llama,   "LlamaForCausalLM",   "llama",    "llama",   AdjacentPairs,    {false,    false},
     false,             SlidingWindowRule::Never,                    R"({"attention_bias": false, "mlp_bias": false})"},
  {HfArchitecture::Mistral, "MistralForCausalLM", "mistral",  "llama",   AdjacentPairs,    {false,    false},
     false,             SlidingWindowRule::WhenSet,                  R"({"sliding_window": null})"},
  {HfArchitecture::Qwen2,   "Qwen2ForCausalLM",   "qwen2",    "qwen2",   RotateHalf,       {true,     false},
     false,             SlidingWindowRule::WhenUseSlidingWindow,     R"({"use_sliding_window": false})"},
  {HfArchitecture::Qwen3,   "Qwen3ForCausalLM",   "qwen3",    "qwen3",   RotateHalf,       {false,    true},
     true,              SlidingWindowRule::WhenUseSlidingWindow,     R"({"attention_bias": false, "use_sliding_window": false})"},
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

const Architecture* gguf_architecture(const std::string& gguf_name) {
  for (const auto& a : kArchitectures)
    if (gguf_name == a.gguf_name) return &a;
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
    if (gguf_architecture(a.gguf_name) != &a) continue;  // named by an earlier row
    out += (out.empty() ? "" : ", ") + std::string(a.gguf_name);
  }
  return out;
}

}  // namespace astrai
