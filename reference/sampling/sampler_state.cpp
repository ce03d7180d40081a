// Per-request sampling state: a pipeline and a generator seeded once.
#include "reference/sampling/sampler_state.h"

namespace astrai {

SamplerState::SamplerState(const SamplingParams& params)
    : pipeline_(params), seed_(params.seed ? *params.seed : random_seed()), rng_(seed_) {}

int SamplerState::next(std::span<const float> logits) { return pipeline_.sample(logits, rng_); }

}  // namespace astrai
