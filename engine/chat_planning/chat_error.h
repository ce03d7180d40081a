// What can go wrong with a chat request once its protocol has read it, in
// words every protocol has; each protocol names them its own way (OpenAI's
// type and code, Anthropic's error.type) and the server maps them to HTTP
// statuses (server/protocols/protocols.h).
#pragma once

#include <stdexcept>
#include <string>

namespace astrai {

enum class ErrorKind {
  InvalidRequest,  // 400
  ContextLength,   // 400: the prompt does not fit the model's context
  Authentication,  // 401
  Overloaded,      // 503 with Retry-After: the waiting queue is full
  Unavailable,     // 503: shutting down, or the request was cancelled
  Internal,        // 500
};

// A request the planner (chat_plan.h) refuses, with the message the client
// gets.
class ChatError : public std::runtime_error {
 public:
  ChatError(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

}  // namespace astrai
