// A model's own chat template, rendered as Hugging Face's
// tokenizer.apply_chat_template(messages, tokenize=False,
// add_generation_prompt=...) renders it: the Jinja text of
// tokenizer_config.json's `chat_template` (or GGUF tokenizer.chat_template)
// with the context transformers passes: the special tokens the tokenizer
// config sets (bos_token, eos_token, unk_token, pad_token), `messages`, `tools` and `documents`
// (None unless given), `add_generation_prompt`, and any extra keys
// (e.g. enable_thinking for Qwen 3). The Jinja engine is engine/jinja/.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "engine/chat/chat_message.h"
#include "engine/jinja/template.h"
#include "engine/tokenizer/tokenizer.h"

namespace astrai {

// The parts of tokenizer_config.json a chat template needs.
struct HfTemplateConfig {
  std::string chat_template;            // the Jinja text
  std::optional<std::string> bos_token;  // absent or null in the file: not defined for the template
  std::optional<std::string> eos_token;
  std::optional<std::string> unk_token;  // also in transformers' special_tokens_map
  std::optional<std::string> pad_token;
};

// From tokenizer_config.json's JSON: chat_template is a string, or a list of
// {"name", "template"} of which "default" is used; bos_token / eos_token are
// a string or an {"content": ...} object (AddedToken). Throws
// std::runtime_error naming `source` (the file) and the problem.
HfTemplateConfig parse_tokenizer_config(const nlohmann::ordered_json& config, const std::string& source);
// Reads and parses the file; throws std::runtime_error naming it.
HfTemplateConfig read_tokenizer_config(const std::string& path);
// The file's chat_template, or "" when it has none (a base model's, such as
// Llama 2's or Mistral 7B v0.1's); throws as read_tokenizer_config otherwise.
std::string read_chat_template(const std::string& path);
// A model's template (GGUF tokenizer.chat_template, or a folder's) with its
// tokenizer's BOS and EOS pieces as bos_token and eos_token (no bos_token
// when the vocabulary has no BOS, as Qwen's tokenizer_config.json says null).
HfTemplateConfig template_config_for(std::string chat_template, const Tokenizer& tokenizer);

// transformers' continue_final_message: `rendered` cut right after the final
// message's text, keeping its trailing spaces only when the template kept
// the message's text whole (apply_chat_template compares the text after the
// stripped message's place with the unstripped message). Throws
// std::invalid_argument when the stripped message is not in `rendered`.
std::string continue_final_message(std::string rendered, std::string_view final_message);

// A message as vLLM hands it to a template: {"role", "content" (a string,
// "" for a tools-only assistant turn)}, plus "tool_calls" (assistant),
// "tool_call_id" and "name" (tool) when set.
nlohmann::ordered_json template_message(const ChatMessage& m);

class HfChatTemplate {
 public:
  // Parses the template once; throws jinja::TemplateError.
  explicit HfChatTemplate(HfTemplateConfig config);

  // The prompt for `messages`; `extra` holds further template variables
  // (a JSON object, may be null). Throws jinja::TemplateError (and
  // jinja::RaisedException when the template calls raise_exception).
  std::string render(std::span<const ChatMessage> messages, bool add_generation_prompt,
                     const nlohmann::ordered_json& extra = nullptr) const;

  // One request as `astrai chat-template --jsonl` reads it: {"messages": [...],
  // "add_generation_prompt": bool (default false), "continue_final_message":
  // bool (default false; no template variable, as in transformers), other
  // keys = variables}. Messages are passed as given (any keys). Throws
  // std::invalid_argument for a malformed request (continue_final_message
  // with add_generation_prompt, as transformers refuses it), jinja::TemplateError
  // from the template.
  std::string render_request(const nlohmann::ordered_json& request) const;

  const HfTemplateConfig& config() const { return config_; }

 private:
  HfTemplateConfig config_;
  jinja::Template template_;
};

}  // namespace astrai
