// The knobs a generation request sets to choose how each next token is drawn
// from the logits: the same names and defaults as the OpenAI-style API.
//
// The order they apply in (docs/sampling.md):
//   repetition_penalty -> frequency/presence penalties -> logit_bias      (penalties.h, on the float row)
//   -> temperature -> top_k -> top_p -> min_p -> softmax -> one draw     (sampler.h)
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace astrai {

// logit_bias values at or below this ban the token outright (its logit
// becomes -inf), as OpenAI documents -100 to do; above it they are added.
inline constexpr float kLogitBiasBan = -100.0f;

struct SamplingParams {
  // Logits are divided by it; 0 means greedy (argmax, lowest id on ties).
  float temperature = 1.0f;
  // Keep only the k most likely tokens; 0 disables the cut (whole vocabulary).
  int top_k = 50;
  // Keep the smallest most-likely prefix whose mass reaches top_p; 1 keeps all.
  float top_p = 1.0f;
  // Same seed, same tokens; without one a seed is drawn from std::random_device.
  std::optional<std::uint64_t> seed;
  // (The fields below came later; they follow seed so that the positional
  // initialisers {temperature, top_k, top_p, seed} in use stay valid.)
  // Keep the tokens whose probability is at least min_p times the most likely
  // one's (after top_p); 0 keeps all.
  float min_p = 0.0f;
  // OpenAI: subtracted once from the logit of every token generated so far.
  float presence_penalty = 0.0f;
  // OpenAI: subtracted from a token's logit once per time it was generated.
  float frequency_penalty = 0.0f;
  // Hugging Face / vLLM: the logit of every token in the prompt or generated
  // so far is divided by it when positive, multiplied by it when not; 1 is off.
  float repetition_penalty = 1.0f;
  // {token id, bias}: added to that token's logit; kLogitBiasBan (-100) bans it.
  std::vector<std::pair<int, float>> logit_bias = {};

  // Throws std::invalid_argument naming the first bad field: temperature
  // negative or not finite, top_k negative, top_p outside (0, 1], min_p
  // outside [0, 1], presence/frequency penalty outside [-2, 2],
  // repetition_penalty not finite or <= 0, a logit_bias id negative or a
  // bias outside [-100, 100]. (Ids past the vocabulary: validate(vocab).)
  void validate() const;
  // The same, and every logit_bias id must be below vocab_size.
  void validate(int vocab_size) const;

  // Whether any penalty or bias changes the logits (penalties.h has work to do).
  bool adjusts_logits() const {
    return presence_penalty != 0.0f || frequency_penalty != 0.0f || repetition_penalty != 1.0f || !logit_bias.empty();
  }
};

}  // namespace astrai
