// Template lookup by name, detection from GGUF metadata, and shared helpers.
#include "engine/chat/chat_template.h"

#include <stdexcept>

#include "engine/chat/chat_templates.h"

namespace astrai {

const char* to_string(ChatRole role) {
  switch (role) {
    case ChatRole::System: return "system";
    case ChatRole::User: return "user";
    case ChatRole::Assistant: return "assistant";
    case ChatRole::Tool: return "tool";
  }
  return "unknown";
}

std::string prompt_text(const Prompt& prompt) {
  std::string out;
  for (const PromptPart& part : prompt) {
    switch (part.kind) {
      case PromptPart::Kind::Bos: out += "<s>"; break;
      case PromptPart::Kind::Eos: out += "</s>"; break;
      default: out += part.text;
    }
  }
  return out;
}

Prompt ChatTemplate::render(std::span<const ChatMessage> messages, const ChatOptions& options) const {
  // The built-in templates have no markup for tools: refusing is better than
  // a prompt in which the model never sees them.
  bool tool_turns = !options.tools.is_null();
  for (const ChatMessage& m : messages) tool_turns = tool_turns || m.role == ChatRole::Tool || !m.tool_calls.is_null();
  if (tool_turns)
    throw std::invalid_argument("the built-in chat template '" + name() +
                                "' has no place for tools, tool calls or tool results; serve a model with its own "
                                "(Jinja) chat template");
  return render(messages);
}

const std::vector<std::string>& chat_template_names() {
  static const std::vector<std::string> names = {"plain", "llama2", "chatml", "llama3"};
  return names;
}

std::unique_ptr<ChatTemplate> make_chat_template(std::string_view name) {
  if (name == "plain") return make_plain_template();
  if (name == "llama2") return make_llama2_template();
  if (name == "chatml") return make_chatml_template();
  if (name == "llama3") return make_llama3_template();
  std::string known;
  for (const auto& n : chat_template_names()) {
    if (!known.empty()) known += ", ";
    known += n;
  }
  throw std::invalid_argument("unknown chat template '" + std::string(name) + "' (known: " + known + ")");
}

std::string detect_chat_template(std::string_view text) {
  // Llama 3 first: its templates mention no [INST], but fine-tunes of it may
  // quote other formats in comments, and its header tokens are unambiguous.
  if (text.find("<|start_header_id|>") != std::string_view::npos) return "llama3";
  if (text.find("<|im_start|>") != std::string_view::npos) return "chatml";
  if (text.find("[INST]") != std::string_view::npos) return "llama2";
  return "plain";
}

namespace chat_detail {

std::string trim(const std::string& s) {
  const char* space = " \t\n\r\f\v";
  const size_t first = s.find_first_not_of(space);
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(space) - first + 1);
}

void append_text(Prompt& prompt, const std::string& text) {
  if (text.empty()) return;
  if (!prompt.empty() && prompt.back().kind == PromptPart::Kind::Text)
    prompt.back().text += text;
  else
    prompt.push_back({PromptPart::Kind::Text, text});
}

void append_special(Prompt& prompt, PromptPart::Kind kind, const std::string& piece) {
  prompt.push_back({kind, piece});
}

}  // namespace chat_detail
}  // namespace astrai
