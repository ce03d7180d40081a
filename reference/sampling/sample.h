// One-shot sampling: a token from a logits row without keeping a SamplerState.
#pragma once

#include <span>

#include "reference/sampling/rng.h"
#include "reference/sampling/sampling_params.h"

namespace astrai {

// Builds the pipeline for params and draws with the caller's generator.
int sample(std::span<const float> logits, const SamplingParams& params, Rng& rng);
// The first token a fresh request with these params would get: seeded with
// params.seed, or with random_seed() when it has none.
int sample(std::span<const float> logits, const SamplingParams& params);

}  // namespace astrai
