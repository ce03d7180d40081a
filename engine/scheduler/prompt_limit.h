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

// The same rule, decided from the prompt's bytes before it is tokenized, for
// prompts so long that tokenizing them would be the costly part (a 3 MB
// prompt against a context of a few thousand tokens). When no token stands
// for more than `max_token_bytes` bytes of text, a prompt whose text parts
// hold `text_bytes` bytes has at least ceil(text_bytes / max_token_bytes)
// tokens (special tokens and BOS only add to that). The error to give when
// that many already overflow the context; nothing otherwise (the prompt may
// still be too long: tokenize it and ask prompt_too_long).
inline std::optional<std::string> prompt_surely_too_long(size_t text_bytes, size_t max_token_bytes, int context) {
  if (max_token_bytes == 0) return std::nullopt;
  const size_t at_least = text_bytes / max_token_bytes + (text_bytes % max_token_bytes != 0);
  if (at_least <= size_t(context)) return std::nullopt;
  return "the prompt has at least " + std::to_string(at_least) + " tokens (" + std::to_string(text_bytes) +
         " bytes of text, and no token of this model stands for more than " + std::to_string(max_token_bytes) +
         " bytes) but the model's context holds " + std::to_string(context);
}

}  // namespace astrai
