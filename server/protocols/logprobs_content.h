// OpenAI's logprobs content entries, one per generated token:
//   {"token": "...", "logprob": -0.31, "bytes": [32, 116, ...],
//    "top_logprobs": [{"token": "...", "logprob": ..., "bytes": [...]}, ...]}
// `token` is the token's bytes as text (a byte sequence that is not whole
// UTF-8, part of a character, comes out with U+FFFD, as json_text writes any
// invalid text); `bytes` are the exact bytes, so a client can join them.
#pragma once

#include <span>
#include <utility>

#include <nlohmann/json.hpp>

#include "engine/tokenizer/tokenizer.h"
#include "reference/sampling/logprobs.h"

namespace astrai {

class LogprobsContent {
 public:
  // previous_token: the prompt's last token (a token's bytes may depend on
  // the one before it: the first piece after BOS loses its leading space).
  LogprobsContent(const Tokenizer& tokenizer, int previous_token) : tokenizer_(tokenizer), previous_(previous_token) {}

  // The entries of the next tokens, in order.
  nlohmann::ordered_json entries(std::span<const std::pair<int, TokenLogprobs>> tokens);

 private:
  nlohmann::ordered_json one(int token, double logprob) const;
  const Tokenizer& tokenizer_;
  int previous_;
};

}  // namespace astrai
