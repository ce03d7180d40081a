// One turn of a conversation, as the chat APIs (OpenAI, Anthropic) send it
// after their own shapes are unpacked: a role and plain text.
#pragma once

#include <string>

namespace astrai {

enum class ChatRole { System, User, Assistant };

struct ChatMessage {
  ChatRole role = ChatRole::User;
  std::string content;
};

// "system", "user", "assistant".
const char* to_string(ChatRole role);

}  // namespace astrai
