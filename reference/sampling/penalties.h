// Penalties and logit bias: the first steps of the sampling order
// (docs/sampling.md), applied to the float logits row before temperature.
//
//   repetition_penalty (Hugging Face / vLLM): every token of the prompt or of
//     the output so far: l <- l / r if l > 0, else l * r
//   frequency_penalty, presence_penalty (OpenAI), over the output so far:
//     l <- l - frequency_penalty * count - presence_penalty * (count > 0)
//   logit_bias: l <- l + bias; a bias of -100 (kLogitBiasBan) bans: l <- -inf
//
// Only tokens seen or biased change, so the work is a list of adjustments
// (one per such token, made on the host from the sequence's token counts) and
// never a pass over the vocabulary: the CUDA sampler applies the same list to
// its device row (cuda/kernels/sample.cu) with the same arithmetic.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "reference/sampling/sampling_params.h"

namespace astrai {

// What the penalties know of one sequence: each token that occurred, how many
// times it was generated and whether the prompt holds it. Updated once per
// generated token (O(1)), never per vocabulary entry.
class TokenCounts {
 public:
  struct Entry {
    int token = 0;
    int generated = 0;       // times in the output so far
    bool in_prompt = false;
  };

  TokenCounts() = default;
  explicit TokenCounts(std::span<const int> prompt);
  void add_generated(int token);
  // Every token seen, in the order first seen.
  std::span<const Entry> entries() const { return entries_; }
  int generated(int token) const;

 private:
  Entry& entry(int token);
  std::vector<Entry> entries_;
  std::unordered_map<int, std::size_t> index_;
};

// The change to one token's logit.
struct LogitAdjustment {
  int token = 0;
  bool banned = false;      // logit_bias -100: the logit becomes -inf
  bool repetition = false;  // the repetition penalty applies (token seen, penalty != 1)
  // bias - (frequency_penalty * generated + presence_penalty), in float64, the
  // penalties only for a token generated at least once (else bias alone).
  double offset = 0.0;
};

// The adjustment of one token generated `generated` times, in the prompt or
// not, with its logit_bias (nullptr: none); nullopt when nothing changes it.
std::optional<LogitAdjustment> adjustment_of(const SamplingParams& params, int token, int generated, bool in_prompt,
                                             const float* bias);

// One adjustment per token that params change given counts (none when
// !params.adjusts_logits()), in no particular order: each touches its own token.
std::vector<LogitAdjustment> logit_adjustments(const SamplingParams& params, const TokenCounts& counts);

// logit_adjustments kept up to date as tokens are generated: O(1) a token
// (only that token's adjustment changes), so a scheduler step reads the list
// without rebuilding it. What SamplerState holds.
class AdjustmentList {
 public:
  AdjustmentList() = default;
  AdjustmentList(const SamplingParams& params, std::span<const int> prompt);
  void add_generated(int token);
  std::span<const LogitAdjustment> adjustments() const { return adjustments_; }

 private:
  SamplingParams params_;
  TokenCounts counts_;
  std::unordered_map<int, float> bias_;
  std::unordered_map<int, std::size_t> at_;  // token -> its place in adjustments_
  std::vector<LogitAdjustment> adjustments_;
};

// One token's new logit: in float64, x = logit; x = x > 0 ? x / r : x * r when
// the repetition penalty applies; then float(x + offset), rounded once to float.
// A banned token gets -inf. NaN and +inf stay what they are (the sampler
// rejects them).
float adjusted_logit(float logit, const LogitAdjustment& adjustment, float repetition_penalty);

// Applies every adjustment to the row; an id outside it is std::invalid_argument.
void apply_adjustments(std::span<float> row, std::span<const LogitAdjustment> adjustments, float repetition_penalty);

}  // namespace astrai
