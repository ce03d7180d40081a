// The batching tests' oracle on a CUDA executor (one GPU or a
// tensor-parallel group): each planned request's tokens from the sequential
// loop alone (cuda_generate.h) on that executor, with the reference
// oracle's stop rules (EOS and BOS unless ignore_eos, then its own stop ids).
#pragma once

#include <vector>

#include "reference/sampling/sampler.h"
#include "tests/cuda/cuda_generate.h"
#include "tests/engine/scheduler/engine_harness.h"

namespace astrai::test {

// `cache` is one the executor made, with room for one request at a time.
inline void compute_expected_on(Executor& executor, KVCache& cache, std::vector<PlannedRequest>& requests) {
  const TinyModel& m = tiny_model();
  for (auto& r : requests) {
    GenerateOptions options;
    options.max_new_tokens = r.max_tokens;
    if (!r.ignore_eos) options.stop_tokens = {m.tokenizer->eos_id(), m.tokenizer->bos_id()};
    for (int id : r.stop_token_ids) options.stop_tokens.push_back(id);
    SamplerState sampler(r.sampling, r.prompt);  // the prompt counts for the repetition penalty
    r.expected = cuda_generate(executor, cache, r.prompt, options,
                               [&](std::span<const float> logits) { return sampler.next(logits); });
  }
}

}  // namespace astrai::test
