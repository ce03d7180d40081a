// The right answer for one engine request: the sequential reference loop
// (reference/generate.h) run alone on the same prompt, with a fresh
// SamplerState of the same parameters. Kept in its own translation unit so
// that engine tests never see the reference loop's option struct.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "engine/scheduler/finish_reason.h"
#include "engine/tokenizer/tokenizer.h"
#include "reference/model_weights.h"
#include "reference/sampling/logprobs.h"
#include "reference/sampling/sampling_params.h"

namespace astrai::test {

// Tokens astrai::generate chooses for `prompt` with max_new_tokens = max_tokens,
// stop tokens {EOS, BOS} (none with ignore_eos) plus stop_token_ids and
// SamplerState(sampling, prompt). With logprobs >= 0 and logprobs_out, each
// token's token_logprobs(its raw row, token, logprobs) goes there.
std::vector<int> reference_tokens(const ModelWeights& weights, const Tokenizer& tokenizer,
                                  std::span<const int> prompt, int max_tokens, const SamplingParams& sampling,
                                  bool ignore_eos = false, const std::vector<int>& stop_token_ids = {},
                                  int logprobs = -1, std::vector<TokenLogprobs>* logprobs_out = nullptr);

// The reference loop under a constraint, stated without a mask: at each step
// the logits of the tokens allowed(generated so far) alone, compacted in id
// order, are sampled with the request's next uniform (Rng(*sampling.seed)),
// and the drawn index mapped back to its id. sampling must be seeded and have
// no penalties or bias. Stops as reference_tokens does (stop tokens, max_tokens,
// the context). Logprobs, as there, of the raw row.
std::vector<int> compacted_reference_tokens(const ModelWeights& weights, const Tokenizer& tokenizer,
                                            std::span<const int> prompt, int max_tokens,
                                            const SamplingParams& sampling,
                                            const std::function<std::vector<int>(const std::vector<int>&)>& allowed,
                                            bool ignore_eos = false, int logprobs = -1,
                                            std::vector<TokenLogprobs>* logprobs_out = nullptr);

// Why the reference stopped after `tokens`: EOS/BOS (or one of
// stop_token_ids) last, else max_tokens reached, else the context.
FinishReason reference_reason(const Tokenizer& tokenizer, const std::vector<int>& tokens, int max_tokens,
                              bool ignore_eos = false, const std::vector<int>& stop_token_ids = {});

// The raw bytes of `tokens` following `prompt`, one entry per token, as
// Tokenizer::decode_token gives them (what the engine's text is made of).
std::vector<std::string> token_bytes(const Tokenizer& tokenizer, std::span<const int> prompt,
                                     const std::vector<int>& tokens);

}  // namespace astrai::test
