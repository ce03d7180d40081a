// The one rule for "the prompt is too long", shared by the scheduler (which
// refuses such a request) and the server (which answers 400
// context_length_exceeded before submitting anything).
//
// A prompt fits when it has at most `context` (max_seq_len) tokens. A prompt
// that fills the whole context still gets one token, as in the sequential
// loop that defines generation (reference/generate.cpp): the token its last
// position's logits choose, after which the request ends with finish reason
// ContextLimit ("length" in both APIs); that token is never fed back, so it
// needs no cache position.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace astrai {

// The error to give, or nothing when the prompt fits.
inline std::optional<std::string> prompt_too_long(size_t prompt_tokens, int context) {
  if (prompt_tokens <= size_t(context)) return std::nullopt;
  return "the prompt has " + std::to_string(prompt_tokens) + " tokens but the model's context holds " +
         std::to_string(context) + " (a prompt may fill the whole context; it then gets one generated token)";
}

}  // namespace astrai
