#include "engine/chat/jinja_chat_template.h"

#include <stdexcept>

namespace astrai {

namespace {

// Python's str.strip() / lstrip() of ASCII whitespace (what the chat messages
// of the tests and APIs carry around their text).
constexpr std::string_view kSpace = " \t\n\r\f\v";
std::string_view lstrip(std::string_view s) {
  const size_t first = s.find_first_not_of(kSpace);
  return first == std::string_view::npos ? std::string_view() : s.substr(first);
}
std::string_view strip(std::string_view s) {
  s = lstrip(s);
  return s.substr(0, s.find_last_not_of(kSpace) + 1);
}

// transformers' continue_final_message: cut the rendered chat right after
// the final message's text, keeping its trailing spaces when the template did.
std::string continue_final_message(std::string rendered, const std::string& final_message) {
  const std::string_view stripped = strip(final_message);
  const size_t at = rendered.rfind(stripped);
  if (at == std::string::npos)
    throw std::invalid_argument("the chat template's prompt does not contain the final assistant message to continue");
  const std::string_view kept = lstrip(final_message);
  const bool spacing_kept = std::string_view(rendered).substr(at, kept.size()) == kept;
  rendered.resize(at + (spacing_kept ? kept.size() : stripped.size()));
  return rendered;
}

}  // namespace

Prompt JinjaChatTemplate::render(std::span<const ChatMessage> messages) const {
  const bool prefill = !messages.empty() && messages.back().role == ChatRole::Assistant;
  std::string text = template_.render(messages, /*add_generation_prompt=*/!prefill);
  if (prefill) text = continue_final_message(std::move(text), messages.back().content);
  return {PromptPart{PromptPart::Kind::Rendered, std::move(text)}};
}

}  // namespace astrai
