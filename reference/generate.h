// The sequential generation loop: one request, one token at a time. This is
// the definition of what a request must get; the engine's continuous batching
// is tested against it.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "reference/model_weights.h"

namespace astrai {

// Chooses the next token from one row of logits (greedy argmax, or a sampler).
using TokenChooser = std::function<int(std::span<const float> logits)>;

// The index of the largest logit; the lowest index wins ties (as llama2.c).
int argmax(std::span<const float> logits);

struct GenerateOptions {
  int max_new_tokens = 256;
  std::vector<int> stop_tokens;  // generation ends after emitting one of these
};

// Prefills `prompt` (which must be non-empty) in one forward batch, then
// repeatedly chooses a token and feeds it back. Returns the chosen tokens,
// including a final stop token if one was chosen. Ends after max_new_tokens,
// at a stop token, or when the next position would leave the context.
std::vector<int> generate(const ModelWeights& weights, std::span<const int> prompt, const GenerateOptions& options,
                          const TokenChooser& choose);

}  // namespace astrai
