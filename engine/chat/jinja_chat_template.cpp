#include "engine/chat/jinja_chat_template.h"

#include <stdexcept>

namespace astrai {

Prompt JinjaChatTemplate::render(std::span<const ChatMessage> messages) const { return render(messages, ChatOptions{}); }

Prompt JinjaChatTemplate::render(std::span<const ChatMessage> messages, const ChatOptions& options) const {
  nlohmann::ordered_json variables = nlohmann::ordered_json::object();
  if (options.variables.is_object())
    for (const auto& [key, value] : options.variables.items())
      if (key != "messages" && key != "tools" && key != "add_generation_prompt" && key != "continue_final_message")
        variables[key] = value;
  if (!options.tools.is_null()) variables["tools"] = options.tools;
  const bool prefill = !messages.empty() && messages.back().role == ChatRole::Assistant && messages.back().tool_calls.is_null();
  std::string text = template_.render(messages, /*add_generation_prompt=*/!prefill, variables);
  if (prefill) text = continue_final_message(std::move(text), messages.back().content);
  return {PromptPart{PromptPart::Kind::Rendered, std::move(text)}};
}

}  // namespace astrai
