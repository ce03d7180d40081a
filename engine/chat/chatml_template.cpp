// ChatML (OpenAI's markup, used by Qwen, Hermes, TinyLlama-chat and others):
//
//   <|im_start|>{role}\n{content}<|im_end|>\n ... <|im_start|>assistant\n
//
// Contents are taken as they are (no stripping), as the common templates do.
#include "engine/chat/chat_templates.h"

namespace astrai {
namespace {

using chat_detail::append_special;
using chat_detail::append_text;

class ChatMLTemplate : public ChatTemplate {
 public:
  std::string name() const override { return "chatml"; }

  Prompt render(std::span<const ChatMessage> messages) const override {
    Prompt prompt;
    for (size_t i = 0; i < messages.size(); ++i) {
      const ChatMessage& m = messages[i];
      append_special(prompt, PromptPart::Kind::Special, "<|im_start|>");
      append_text(prompt, std::string(to_string(m.role)) + "\n" + m.content);
      if (m.role == ChatRole::Assistant && i + 1 == messages.size()) return prompt;  // left open
      append_special(prompt, PromptPart::Kind::Special, "<|im_end|>");
      append_text(prompt, "\n");
    }
    append_special(prompt, PromptPart::Kind::Special, "<|im_start|>");
    append_text(prompt, "assistant\n");
    return prompt;
  }
};

}  // namespace

std::unique_ptr<ChatTemplate> make_chatml_template() { return std::make_unique<ChatMLTemplate>(); }

}  // namespace astrai
