// Log-probabilities for the API's `logprobs` / `top_logprobs`: the log-softmax
// of the model's raw logits row, before penalties, bias, temperature and any
// cut (docs/sampling.md says why). Naive on purpose: one pass for the maximum,
// one for the sum, a selection for the top n.
#pragma once

#include <span>
#include <vector>

namespace astrai {

// The most likely tokens can be asked for up to this many (OpenAI's limit).
inline constexpr int kMaxTopLogprobs = 20;

struct TopLogprob {
  int token = 0;
  double logprob = 0.0;
};

// One generated token's log-probability and the row's most likely tokens.
struct TokenLogprobs {
  double logprob = 0.0;            // of the chosen token
  std::vector<TopLogprob> top;     // the top_n most likely, more likely first (ties: lower id)
};

// log p_i = l_i - (max + log(sum_j exp(l_j - max))), in float64, the sum in id
// order over the finite logits (a -inf logit has log p = -inf). `top_n` in
// [0, kMaxTopLogprobs]; fewer when the row has fewer finite logits. Throws
// std::invalid_argument for a row the sampler rejects (empty, NaN, +inf,
// nothing finite) or a token outside it.
TokenLogprobs token_logprobs(std::span<const float> logits, int token, int top_n);

}  // namespace astrai
