// One turn of a conversation, as the chat APIs (OpenAI, Anthropic) send it
// after their own shapes are unpacked: a role and plain text, and for agents
// the tool calls an assistant turn made and the results tool turns return.
#pragma once

#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace astrai {

enum class ChatRole { System, User, Assistant, Tool };

struct ChatMessage {
  // {role, content}, the common turn (a constructor, not an aggregate, so
  // that the tool fields need not be spelled at every turn).
  ChatMessage() = default;
  ChatMessage(ChatRole role, std::string content) : role(role), content(std::move(content)) {}

  ChatRole role = ChatRole::User;
  // An assistant turn that only called tools (OpenAI's content: null, an
  // Anthropic turn of tool_use blocks) has "": templates get a string, as
  // vLLM hands them one (Qwen 3's template tests `in message.content`, which
  // None fails).
  std::string content;
  // Assistant: the calls it made, as chat templates read them (transformers'
  // and vLLM's shape): [{"id", "type": "function", "function": {"name",
  // "arguments": an object}}]; null when none.
  nlohmann::ordered_json tool_calls = nullptr;
  // Assistant: its reasoning as the client sends it back (OpenAI's
  // reasoning_content or reasoning, Anthropic's thinking blocks); templates
  // get it as reasoning_content (Qwen 3's name, as vLLM passes it through)
  // and thinking (gpt-oss's, which keeps a tool call's analysis) when not "".
  std::string reasoning;
  std::string tool_call_id;  // Tool: the call this result answers ("" when not given)
  std::string name;          // Tool: the function's name ("" when not given)
};

// "system", "user", "assistant", "tool".
const char* to_string(ChatRole role);

}  // namespace astrai
