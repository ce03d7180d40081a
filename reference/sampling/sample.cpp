// One-shot sampling shortcuts over SamplingPipeline and SamplerState.
#include "reference/sampling/sample.h"

#include "reference/sampling/sampler_state.h"
#include "reference/sampling/sampling_pipeline.h"

namespace astrai {

int sample(std::span<const float> logits, const SamplingParams& params, Rng& rng) {
  return SamplingPipeline(params).sample(logits, rng);
}

int sample(std::span<const float> logits, const SamplingParams& params) { return SamplerState(params).next(logits); }

}  // namespace astrai
