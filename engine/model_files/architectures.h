// The architectures AstrAI reads and writes, one row each: the names
// Hugging Face and llama.cpp give it, the RoPE layout llama.cpp runs it with,
// and the options its layers have (which of the weight table's optional rows
// it stores: weight_table.h), and what its config.json says beyond the
// fields every architecture shares. Adding an architecture starts with a row
// here (docs/adding-an-architecture.md).
#pragma once

#include <span>
#include <string>

#include "engine/model_files/hf/hf_config.h"
#include "reference/model_config.h"

namespace astrai {

// When config.json's sliding_window caps the attention window (hf_config.cpp).
enum class SlidingWindowRule {
  Never,                 // the architecture has no sliding window
  WhenSet,               // sliding_window applies unless it is null (Mistral)
  WhenUseSlidingWindow,  // only when use_sliding_window is true (Qwen 2, Qwen 3)
};

struct Architecture {
  HfArchitecture id;
  const char* hf_name;          // config.json "architectures": "Qwen3ForCausalLM"
  const char* model_type;       // config.json "model_type": "qwen3"
  const char* gguf_name;        // GGUF general.architecture (llama.cpp's): "qwen3"
  RopeLayout gguf_rope_layout;  // llama.cpp's "normal" RoPE is AdjacentPairs, "neox" RotateHalf
  LayerOptions options;         // ModelConfig::options: q/k/v biases, per-head q/k RMSNorm
  // config.json: "head_dim" always written and required when read (Qwen 3,
  // whose config class defaults it to 128 rather than hidden_size / heads).
  bool head_dim_required;
  SlidingWindowRule sliding_window;
  // Fields transformers writes for it beyond the shared ones, as a JSON
  // object merged into the config.json hf_config_json writes.
  const char* config_json_extras;
};

std::span<const Architecture> architectures();
const Architecture& architecture(HfArchitecture id);
// The first row whose options are the config's (Llama before Mistral, which
// has the same layers); nullptr when none has them.
const Architecture* architecture_with_options(const ModelConfig& config);
// The first row llama.cpp knows by `gguf_name` (Llama for "llama"); nullptr when none.
const Architecture* gguf_architecture(const std::string& gguf_name);
// "LlamaForCausalLM, MistralForCausalLM, ...": every row's hf_name, for error messages.
std::string hf_architecture_names();
// "llama, qwen2, qwen3": the GGUF names, each once, for error messages.
std::string gguf_architecture_names();

}  // namespace astrai
