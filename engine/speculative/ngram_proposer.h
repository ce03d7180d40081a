// N-gram prompt lookup (vLLM's `ngram` method, llama.cpp's lookup decoding):
// guess the next tokens by finding the context's last few tokens earlier in
// the context and proposing what followed them there. Free (no model), and
// right often on code editing, quoting and any text that repeats its input.
#pragma once

#include <span>
#include <string>
#include <vector>

namespace astrai {

struct NgramOptions {
  int max_match = 4;  // the longest suffix looked up (vLLM's prompt_lookup_max)
  int min_match = 2;  // the shortest (prompt_lookup_min); 1 would match any repeated token
  int tokens = 5;     // proposals per step (num_speculative_tokens)
  // Empty when valid, else what is wrong, naming the field.
  std::string invalid() const;
};

// For n = max_match down to min_match: the latest start j < size - n with
// context[j, j + n) equal to the last n tokens, and the up to `most` tokens
// that followed it, context[j + n, ...). The longest n with a match wins;
// empty when no n matches. O(size * max_match) per call.
std::vector<int> propose_ngram(std::span<const int> context, const NgramOptions& options, int most);

}  // namespace astrai
