// Llama 3 (and 3.1/3.2 without tools), as Meta's template lays it out, with
// contents trimmed:
//
//   <|begin_of_text|><|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|>
//   ... <|start_header_id|>assistant<|end_header_id|>\n\n
//
// <|begin_of_text|> is the model's BOS, which the encoder puts first.
#include "engine/chat/chat_templates.h"

namespace astrai {
namespace {

using chat_detail::append_special;
using chat_detail::append_text;
using chat_detail::trim;

class Llama3Template : public ChatTemplate {
 public:
  std::string name() const override { return "llama3"; }

  Prompt render(std::span<const ChatMessage> messages) const override {
    Prompt prompt;
    auto header = [&](const char* role) {
      append_special(prompt, PromptPart::Kind::Special, "<|start_header_id|>");
      append_text(prompt, role);
      append_special(prompt, PromptPart::Kind::Special, "<|end_header_id|>");
      append_text(prompt, "\n\n");
    };
    for (size_t i = 0; i < messages.size(); ++i) {
      const ChatMessage& m = messages[i];
      header(to_string(m.role));
      append_text(prompt, trim(m.content));
      if (m.role == ChatRole::Assistant && i + 1 == messages.size()) return prompt;  // left open
      append_special(prompt, PromptPart::Kind::Special, "<|eot_id|>");
    }
    header("assistant");
    return prompt;
  }
};

}  // namespace

std::unique_ptr<ChatTemplate> make_llama3_template() { return std::make_unique<Llama3Template>(); }

}  // namespace astrai
