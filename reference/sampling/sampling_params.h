// The knobs a generation request sets to choose how each next token is drawn
// from the logits: the same names and defaults as the OpenAI-style API.
#pragma once

#include <cstdint>
#include <optional>

namespace astrai {

struct SamplingParams {
  // Logits are divided by it; 0 means greedy (argmax, lowest id on ties).
  float temperature = 1.0f;
  // Keep only the k most likely tokens; 0 disables the cut (whole vocabulary).
  int top_k = 50;
  // Keep the smallest most-likely prefix whose mass reaches top_p; 1 keeps all.
  float top_p = 1.0f;
  // Same seed, same tokens; without one a seed is drawn from std::random_device.
  std::optional<std::uint64_t> seed;

  // Throws std::invalid_argument naming the first bad field: temperature
  // negative or not finite, top_k negative, top_p outside (0, 1].
  void validate() const;
};

}  // namespace astrai
