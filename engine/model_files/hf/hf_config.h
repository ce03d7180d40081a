// Hugging Face model folders' JSON files: config.json -> ModelConfig for the
// architectures AstrAI runs, generation_config.json -> sampling defaults and
// end-of-sequence ids, and config.json written back for a ModelConfig. See
// docs/model-files.md ("Hugging Face model folders") for every field.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reference/model_config.h"

namespace astrai {

// config.json "architectures": [...], one of these (the first entry).
enum class HfArchitecture { Llama, Mistral, Qwen2, Qwen3, Mixtral, Qwen2Moe, Qwen3Moe, Gemma3, GptOss };
std::string hf_architecture_name(HfArchitecture arch);  // "LlamaForCausalLM", ...
// The architecture a ModelConfig needs: Qwen2 with qkv_bias, Qwen3 with
// qk_norm, else Llama. Throws std::invalid_argument when both are on (no
// Hugging Face architecture has both).
HfArchitecture hf_architecture_for(const ModelConfig& config);

struct HfModelConfig {
  HfArchitecture architecture = HfArchitecture::Llama;
  ModelConfig config;                 // rope_layout RotateHalf (Hugging Face's layout)
  bool tie_word_embeddings = false;   // lm_head shares embed_tokens (default false, as transformers)
  std::string torch_dtype;            // "bfloat16" / "float16" / "float32"; "" when absent
  std::vector<int> eos_token_ids;     // config.json's own eos_token_id (int or list), may be empty
  std::optional<int> bos_token_id;
  // quantization_config {"quant_method": "mxfp4"} (gpt-oss's published
  // checkpoints): the expert stacks may be MXFP4 blocks (out_last_layout.h).
  bool mxfp4_experts = false;
  // Gemma3ForConditionalGeneration: the config is its text_config's and the
  // weights are the text model's, under language_model
  // (multimodal_text_config.h); the vision tower is not read.
  bool multimodal_text = false;
};

// Parses config.json's text; `origin` (the file's path) starts every error
// message. Throws std::runtime_error naming the field for an unknown
// architecture, a missing or mistyped field, an unsupported option (another
// rope_scaling type, biases beyond Qwen 2's q/k/v, an activation other than
// silu, a quantized checkpoint) or values ModelConfig::validate refuses.
HfModelConfig parse_hf_config(std::string_view json_text, const std::string& origin);

// generation_config.json: what generate() uses by default. Fields absent from
// the file stay empty; the engine decides what to do with them.
struct HfGenerationConfig {
  std::vector<int> eos_token_ids;  // eos_token_id, an int or a list: generation stops at any of them
  std::optional<int> bos_token_id;
  std::optional<bool> do_sample;   // transformers samples only when true; vLLM ignores it
  std::optional<float> temperature;  // >= 0
  std::optional<float> top_p;        // in (0, 1]
  std::optional<int> top_k;          // >= 0 (0: no top-k filter, as transformers)
  std::optional<int> max_new_tokens;  // >= 1: the default max_tokens of a request that sets none (vLLM's rule)
};

// Parses generation_config.json's text; token ids must lie in [0, vocab_size).
// Throws std::runtime_error naming `origin` and the field.
HfGenerationConfig parse_hf_generation_config(std::string_view json_text, const std::string& origin, int vocab_size);

// config.json for `config` as `architecture` (the fields transformers writes
// for it; head_dim only when config.explicit_head_dim is set, and always for
// Qwen 3), pretty-printed. Throws std::invalid_argument when the config does
// not fit the architecture (e.g. qkv_bias for Llama) or is invalid.
std::string hf_config_json(const ModelConfig& config, HfArchitecture architecture, bool tie_word_embeddings,
                           const std::string& torch_dtype);
// generation_config.json for `generation` (only the fields that are set).
std::string hf_generation_config_json(const HfGenerationConfig& generation);

}  // namespace astrai
