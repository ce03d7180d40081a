// What the scheduler asks a backend to sample, and what comes back: plain
// values with no tensor, so that the scheduler's step policy can plan them
// without seeing logits (engine/executor/executor.h runs them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "reference/sampling/logprobs.h"
#include "reference/sampling/penalties.h"
#include "reference/sampling/sampling_params.h"

namespace astrai {

// How one wanted row's next token is drawn: its request's parameters and the
// uniform its request's generator drew for this token (SamplerState::next_uniform).
struct RowSampling {
  SamplingParams params;
  double uniform = 0.0;
  // The request's penalties and bias for this token (SamplerState::adjustments(),
  // which the request's state keeps up to date, so this is a view, not a copy):
  // applied to the row before it is sampled. O(tokens seen), never O(vocabulary).
  std::span<const LogitAdjustment> adjustments = {};
  // -1: no log-probabilities; n >= 0: the token's and the n most likely ones
  // (token_logprobs of the raw row, before the adjustments).
  int logprobs = -1;
  // The tokens the request's constraint allows next (reference/sampling/token_mask.h:
  // token_mask_words(vocab) words), owned by the request's task until the
  // step's tokens come back; empty for a request without a constraint, which
  // then costs nothing. Applied after the adjustments, before sampling; never
  // to the logprobs.
  std::span<const std::uint32_t> mask = {};
};

// A further draw from the logits of a row that is already wanted: the n
// choices of one prompt each draw their first token, with their own
// generator, from the one row that computed the prompt's last position.
struct ForkDraw {
  size_t row = 0;  // index among the wanted rows (the i of rows[i])
  RowSampling sampling;
};

// One wanted row's next token, or why there is none (bad logits: NaN, +inf,
// nothing finite). Only that row's request fails; the batch goes on.
struct SampledToken {
  int token = -1;
  std::string error;  // empty when token is valid
  std::optional<TokenLogprobs> logprobs;  // when the row asked for them
};

}  // namespace astrai
