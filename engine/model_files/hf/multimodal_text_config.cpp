#include "engine/model_files/hf/multimodal_text_config.h"

#include <stdexcept>

namespace astrai {

namespace {

// Gemma3TextConfig.__init__'s defaults (transformers' configuration_gemma3.py).
nlohmann::json gemma3_text_defaults() {
  return {
      {"vocab_size", 262208},
      {"hidden_size", 2304},
      {"intermediate_size", 9216},
      {"num_hidden_layers", 26},
      {"num_attention_heads", 8},
      {"num_key_value_heads", 4},
      {"head_dim", 256},
      {"hidden_activation", "gelu_pytorch_tanh"},
      {"max_position_embeddings", 131072},
      {"rms_norm_eps", 1e-6},
      {"pad_token_id", 0},
      {"eos_token_id", 1},
      {"bos_token_id", 2},
      {"tie_word_embeddings", true},
      {"rope_theta", 1000000.0},
      {"attention_bias", false},
      {"query_pre_attn_scalar", 256},
      {"sliding_window", 4096},
      {"final_logit_softcapping", nullptr},
      {"attn_logit_softcapping", nullptr},
      {"rope_scaling", nullptr},
      {"rope_local_base_freq", 10000.0},
      {"sliding_window_pattern", 6},
  };
}

}  // namespace

std::optional<nlohmann::json> text_model_config(const nlohmann::json& config, const std::string& origin) {
  const auto architectures = config.find("architectures");
  if (architectures == config.end() || !architectures->is_array() || architectures->empty() ||
      (*architectures)[0] != "Gemma3ForConditionalGeneration")
    return std::nullopt;
  nlohmann::json text = gemma3_text_defaults();
  nlohmann::json given = nlohmann::json::object();  // text_config's own fields
  if (const auto t = config.find("text_config"); t != config.end() && !t->is_null()) {
    if (!t->is_object())
      throw std::runtime_error(origin + ": \"text_config\" is " + t->dump() + ", expected an object");
    given = *t;
  }
  // transformers 4.53+ derives layer_types from the pattern; a text_config
  // that gives layer_types keeps it, and the pattern's default then does not apply.
  if (given.contains("layer_types")) text.erase("sliding_window_pattern");
  for (const auto& [key, value] : given.items()) text[key] = value;
  // The outer config's token ids and dtype (the published files keep
  // eos_token_id [1, 106] there) unless text_config states its own.
  for (const char* key : {"eos_token_id", "bos_token_id", "torch_dtype", "dtype"})
    if (const auto v = config.find(key); v != config.end() && !given.contains(key)) text[key] = *v;
  text["architectures"] = {"Gemma3ForCausalLM"};
  text["model_type"] = "gemma3_text";
  return text;
}

std::string multimodal_text_tensor_name(const std::string& causal_lm_name, bool old_layout) {
  if (old_layout) return "language_model." + causal_lm_name;  // language_model.model.layers..., language_model.lm_head
  constexpr std::string_view kModel = "model.";
  if (causal_lm_name.starts_with(kModel)) return "model.language_model." + causal_lm_name.substr(kModel.size());
  return causal_lm_name;  // lm_head.weight
}

bool is_image_side_tensor(const std::string& stored_name) {
  for (const char* prefix :
       {"vision_tower.", "multi_modal_projector.", "model.vision_tower.", "model.multi_modal_projector."})
    if (stored_name.starts_with(prefix)) return true;
  return false;
}

}  // namespace astrai
