// The architectures AstrAI reads and writes, one row each: the names
// Hugging Face and llama.cpp give it, the RoPE layout llama.cpp runs it with,
// and the options its layers have (which of the weight table's optional rows
// it stores: weight_table.h), and what its config.json says beyond the
// fields every architecture shares. Adding an architecture starts with a row
// here (docs/adding-an-architecture.md).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "engine/model_files/hf/hf_config.h"
#include "reference/model_config.h"

namespace astrai {

// When config.json's sliding_window caps the attention window (hf_config.cpp).
enum class SlidingWindowRule {
  Never,                 // the architecture has no sliding window
  WhenSet,               // sliding_window applies unless it is null (Mistral)
  WhenUseSlidingWindow,  // only when use_sliding_window is true (Qwen 2, Qwen 3)
  // Always, on the layers layer_types names, else every layer but each
  // sliding_window_pattern-th (Architecture::default_sliding_pattern when
  // absent: 6 for Gemma 3, five sliding and one full; 2 for gpt-oss).
  Pattern,
};

// SlidingWindowRule::Pattern's layers: every layer but each pattern-th slides
// (layer l slides when (l + 1) % pattern != 0), as transformers' Gemma 3 and
// gpt-oss configs and llama.cpp's gemma3 and gpt-oss graphs place them.
std::vector<bool> sliding_layers_by_pattern(int n_layers, int pattern);

// How a Mixture-of-Experts architecture's config.json names its fields, and
// what llama.cpp's graph for it does (all nullptr / false for dense rows).
struct MoeFields {
  const char* n_experts = nullptr;  // "num_experts" (Qwen MoE), "num_local_experts" (Mixtral)
  // "moe_intermediate_size"; nullptr: the experts are intermediate_size wide
  // and every layer is sparse (Mixtral).
  const char* expert_hidden_dim = nullptr;
  // "shared_expert_intermediate_size" (Qwen 2 MoE); nullptr: no shared expert.
  const char* shared_expert_hidden_dim = nullptr;
  // Reads "norm_topk_prob" (default false, as transformers' Qwen MoE configs),
  // decoder_sparse_step and mlp_only_layers; else the top-k weights are
  // always renormalised (Mixtral) and every layer is sparse.
  bool qwen_fields = false;
  // Whether llama.cpp's graph for the GGUF architecture renormalises the top-k
  // weights (build_moe_ffn's norm_w: qwen3moe and llama true, qwen2moe false;
  // no key in the file changes it).
  bool gguf_norm_topk_prob = false;
  // gpt-oss: top-k then softmax over the k (ExpertRouting::TopKSoftmax) and
  // the clamped SwiGLU whose limit is config.json's swiglu_limit (default 7,
  // which llama.cpp's gpt-oss graph fixes).
  bool gpt_oss_fields = false;
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
  MoeFields moe{};
  // llama.cpp's loader for its GGUF architecture requires output.weight even
  // when the classifier is the embedding (qwen2moe has no tied fallback).
  bool gguf_output_required = false;
  // The feed-forward activation's config.json field and value.
  const char* activation_field = "hidden_act";
  const char* activation = "silu";
  // tie_word_embeddings when config.json leaves it out (Gemma's config class: true).
  bool tied_by_default = false;
  // Gemma 3: reads rope_local_base_freq, query_pre_attn_scalar and the soft caps.
  bool gemma_fields = false;
  // Which layers slide when config.json has no layer_types nor
  // sliding_window_pattern (SlidingWindowRule::Pattern): all but each n-th.
  int default_sliding_pattern = 6;
};

std::span<const Architecture> architectures();
const Architecture& architecture(HfArchitecture id);
// The first row whose options are the config's (Llama before Mistral, which
// has the same layers); nullptr when none has them.
const Architecture* architecture_with_options(const ModelConfig& config);
// The first row llama.cpp knows by `gguf_name` with experts or without
// (Llama for "llama", Mixtral for "llama" with experts); nullptr when none.
const Architecture* gguf_architecture(const std::string& gguf_name, bool experts);
// "LlamaForCausalLM, MistralForCausalLM, ...": every row's hf_name, for error messages.
std::string hf_architecture_names();
// "llama, qwen2, qwen3": the GGUF names, each once, for error messages.
std::string gguf_architecture_names();

}  // namespace astrai
