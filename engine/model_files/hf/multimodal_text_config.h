// Gemma 3's image-and-text folders (Gemma3ForConditionalGeneration: the 4B,
// 12B and 27B checkpoints) hold a text model and a vision tower. AstrAI
// serves the text model, as llama.cpp's converter does (its mmproj file holds
// the vision tower). Its config.json nests the text model's fields under
// text_config, most of them left to Gemma3TextConfig's defaults, and its
// tensors sit under language_model (transformers before 4.52:
// "language_model.model.layers.0...", "language_model.lm_head.weight"; from
// 4.52: "model.language_model.layers.0...", "lm_head.weight").
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace astrai {

// The config.json a Gemma3ForCausalLM with the same text model would have,
// for a Gemma3ForConditionalGeneration config: text_config over
// Gemma3TextConfig's defaults (transformers builds Gemma3TextConfig(**text_config)),
// the outer config's eos_token_id, bos_token_id and torch_dtype where
// text_config has none. nullopt for any other config. Throws
// std::runtime_error (naming `origin`) when text_config is not an object.
std::optional<nlohmann::json> text_model_config(const nlohmann::json& config, const std::string& origin);

// Where such a folder keeps the tensor a Gemma3ForCausalLM folder names
// `causal_lm_name`: old_layout (transformers before 4.52) under
// "language_model.", else the model's under "model.language_model." and
// lm_head where it was.
std::string multimodal_text_tensor_name(const std::string& causal_lm_name, bool old_layout);

// Whether a stored name belongs to the image side (vision tower, projector),
// which the text model does not read.
bool is_image_side_tensor(const std::string& stored_name);

}  // namespace astrai
