// The model's own chat template (Jinja, engine/chat/hf_chat_template.h) behind
// the ChatTemplate interface the server uses. Its prompt is one Rendered part:
// text in which the template spelled out the special tokens (BOS included),
// encoded with Tokenizer::encode_with_special_tokens, as transformers'
// apply_chat_template(tokenize=True) and vLLM do.
//
// When the last message is the assistant's, the prompt continues it (a
// prefill), as apply_chat_template(continue_final_message=True) does: the
// conversation is rendered without a generation prompt and cut right after
// the final message's text.
#pragma once

#include "engine/chat/chat_template.h"
#include "engine/chat/hf_chat_template.h"

namespace astrai {

class JinjaChatTemplate final : public ChatTemplate {
 public:
  // Parses the template; throws jinja::TemplateError naming an unsupported feature.
  explicit JinjaChatTemplate(HfTemplateConfig config) : template_(std::move(config)) {}

  std::string name() const override { return "jinja"; }
  // Throws jinja::TemplateError (jinja::RaisedException when the template
  // refuses the conversation, e.g. roles that do not alternate), and
  // std::invalid_argument when a continued final message is not in the prompt.
  Prompt render(std::span<const ChatMessage> messages) const override;
  // Tools reach the template as its `tools` variable, the variables as
  // themselves (never replacing messages, tools or add_generation_prompt).
  Prompt render(std::span<const ChatMessage> messages, const ChatOptions& options) const override;
  std::string source() const override { return template_.config().chat_template; }

 private:
  HfChatTemplate template_;
};

}  // namespace astrai
