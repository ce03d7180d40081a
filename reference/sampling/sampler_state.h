// The sampling state one generation request owns: its pipeline and its own
// random generator. Because no generator is shared, a seeded request gives the
// same tokens whatever other requests run beside it and in whatever order the
// scheduler serves them.
#pragma once

#include <cstdint>
#include <span>

#include "reference/sampling/rng.h"
#include "reference/sampling/sampling_params.h"
#include "reference/sampling/sampling_pipeline.h"

namespace astrai {

class SamplerState {
 public:
  // Validates params (std::invalid_argument). The generator is seeded with
  // params.seed, or with random_seed() drawn once here when it has none.
  explicit SamplerState(const SamplingParams& params);

  // The request's next token from one row of logits.
  int next(std::span<const float> logits);

  // The seed in use (the drawn one for an unseeded request), so that any
  // request can be replayed exactly.
  std::uint64_t seed() const { return seed_; }
  const SamplingPipeline& pipeline() const { return pipeline_; }

 private:
  SamplingPipeline pipeline_;
  std::uint64_t seed_;
  Rng rng_;
};

}  // namespace astrai
