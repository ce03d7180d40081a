#include "engine/chat/jinja_chat_template.h"

#include <stdexcept>

namespace astrai {

Prompt JinjaChatTemplate::render(std::span<const ChatMessage> messages) const {
  const bool prefill = !messages.empty() && messages.back().role == ChatRole::Assistant;
  std::string text = template_.render(messages, /*add_generation_prompt=*/!prefill);
  if (prefill) text = continue_final_message(std::move(text), messages.back().content);
  return {PromptPart{PromptPart::Kind::Rendered, std::move(text)}};
}

}  // namespace astrai
