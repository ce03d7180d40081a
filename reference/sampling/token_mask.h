// A token mask: which tokens a constraint (a JSON schema, a regex, a list of
// choices: engine/grammar/) allows next. One bit per token id, bit t % 32 of
// word t / 32 set when token t is allowed: (vocab + 31) / 32 words, the layout
// xgrammar and the device sampler (cuda/kernels/sample.cu) use.
//
// The sampler applies a mask first: a masked token's logit becomes -inf, which
// candidates_from_logits already reads as "never a candidate", so a masked
// token is excluded before temperature, top-k, top-p and min-p, and can never
// be drawn. A row where the mask allows nothing has nothing to sample (the
// scheduler ends such a request before it gets here).
//
// Log-probabilities are NOT masked: they stay token_logprobs of the raw row
// (the model's own log-softmax), as OpenAI and vLLM report them, so a
// constrained token's logprob says how likely the model found it unconstrained.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace astrai {

// Words of a mask over `vocab` tokens.
inline std::size_t token_mask_words(std::size_t vocab) { return (vocab + 31) / 32; }

inline bool token_allowed(std::span<const std::uint32_t> mask, std::size_t token) {
  return (mask[token / 32] >> (token % 32)) & 1u;
}

// Every logit of a token the mask does not allow becomes -inf (whatever it
// was: a masked NaN is not an error, it can never be drawn). Throws
// std::invalid_argument when mask is not token_mask_words(row.size()) words.
void apply_token_mask(std::span<float> row, std::span<const std::uint32_t> mask);

// How many tokens below `vocab` the mask allows.
std::size_t allowed_tokens(std::span<const std::uint32_t> mask, std::size_t vocab);

}  // namespace astrai
