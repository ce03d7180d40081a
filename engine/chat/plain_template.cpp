// The template of base models (stories260K and other llama2.c checkpoints):
// no markup at all, the messages' contents joined by newlines, so that a
// single user message is exactly the text to continue.
#include "engine/chat/chat_templates.h"

namespace astrai {
namespace {

class PlainTemplate : public ChatTemplate {
 public:
  std::string name() const override { return "plain"; }
  Prompt render(std::span<const ChatMessage> messages) const override {
    std::string text;
    for (size_t i = 0; i < messages.size(); ++i) {
      if (i) text += '\n';
      text += messages[i].content;
    }
    Prompt prompt;
    chat_detail::append_text(prompt, text);
    return prompt;
  }
};

}  // namespace

std::unique_ptr<ChatTemplate> make_plain_template() { return std::make_unique<PlainTemplate>(); }

}  // namespace astrai
