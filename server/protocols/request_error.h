// A request that is well-formed JSON with fields of the right types, but that
// asks for something the server refuses with a 400 (not pydantic's 422):
// a parameter it does not support (suffix, best_of), a tool definition that
// is not one. The message names the field; the protocol's builder shapes it
// (OpenAI's error.message, Anthropic's error.message).
#pragma once

#include <stdexcept>
#include <string>

namespace astrai {

class InvalidRequestError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace astrai
