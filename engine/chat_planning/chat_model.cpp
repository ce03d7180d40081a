#include "engine/chat_planning/chat_model.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/chat/jinja_chat_template.h"
#include "engine/chat/prompt_encoder.h"
#include "engine/chat_planning/harmony_output.h"
#include "engine/chat_planning/reasoning_split.h"
#include "engine/tokenizer/hf_tokenizer.h"

namespace astrai {

std::vector<int> ChatModel::encode(const std::vector<ChatMessage>& messages) const {
  return encode(chat_template->render(messages));
}

std::vector<int> ChatModel::encode(const Prompt& prompt) const { return encode_prompt(prompt, engine->tokenizer()); }

ChatModel make_chat_model(std::shared_ptr<InferenceEngine> engine, std::unique_ptr<ChatTemplate> chat_template) {
  ChatModel model;
  model.engine = std::move(engine);
  model.chat_template = std::move(chat_template);
  // What its outputs are read for: the template's own markers say.
  model.tool_call_family = detect_tool_call_family(model.chat_template->source());
  model.split_reasoning = template_has_reasoning(model.chat_template->source());
  model.harmony = template_writes_harmony(model.chat_template->source());
  model.max_token_bytes = longest_token_bytes(model.engine->tokenizer());
  return model;
}

size_t longest_token_bytes(const Tokenizer& tokenizer) {
  const bool byte_level = tokenizer.kind() == TokenizerKind::ByteLevelBpe;
  size_t longest = 1;
  for (int id = 0; id < tokenizer.vocab_size(); ++id) {
    const TokenType type = tokenizer.type(id);
    // Control pieces count too: a byte-level BPE makes them of text that
    // spells them, and so does every tokenizer for a prompt rendered by the
    // model's own template (encode_with_special_tokens).
    if (type == TokenType::Normal || type == TokenType::UserDefined || type == TokenType::Control)
      longest = std::max(longest, tokenizer.piece(id).size());
  }
  // NFC shrinks text at most threefold (Hangul L+V+T jamo, 9 bytes, compose
  // into one 3-byte syllable; a base with its two composable marks takes at
  // least 5 bytes for at most 3), and the bytes counted are the text's before
  // normalization.
  if (byte_level && tokenizer.byte_level_bpe()->normalizes_nfc()) longest *= 3;
  return longest;
}

SamplingParams sampling_defaults(const std::optional<HfGenerationConfig>& generation) {
  SamplingParams defaults;
  if (!generation) return defaults;
  if (generation->temperature) defaults.temperature = *generation->temperature;
  if (generation->top_p) defaults.top_p = *generation->top_p;
  if (generation->top_k) defaults.top_k = *generation->top_k;
  return defaults;
}

std::unique_ptr<ChatTemplate> choose_chat_template(const std::string& model_template, const Tokenizer& tokenizer,
                                                   const std::string& template_name, std::string* note) {
  const bool automatic = template_name.empty() || template_name == "auto";
  const auto& builtin = chat_template_names();
  const bool is_builtin = std::find(builtin.begin(), builtin.end(), template_name) != builtin.end();
  // A Jinja template in a file, instead of the model's own (vLLM's
  // --chat-template PATH, llama.cpp's --chat-template-file).
  if (!automatic && template_name != "jinja" && !is_builtin && std::filesystem::is_regular_file(template_name)) {
    std::ifstream file(template_name, std::ios::binary);
    std::ostringstream text;
    text << file.rdbuf();
    if (!file) throw std::invalid_argument("--chat-template: cannot read " + template_name);
    return std::make_unique<JinjaChatTemplate>(template_config_for(text.str(), tokenizer));
  }
  if (!automatic && template_name != "jinja") return make_chat_template(template_name);
  if (model_template.empty()) {
    if (!automatic) throw std::invalid_argument("--chat-template jinja: the model has no chat template");
    return make_chat_template("plain");
  }
  try {
    return std::make_unique<JinjaChatTemplate>(template_config_for(model_template, tokenizer));
  } catch (const jinja::TemplateError& e) {
    if (!automatic) throw;
    const std::string fallback = detect_chat_template(model_template);
    if (note) *note = std::string("the model's chat template is outside this engine's Jinja subset (") + e.what() +
                      "); serving with the built-in '" + fallback + "' template instead";
    return make_chat_template(fallback);
  }
}

}  // namespace astrai
