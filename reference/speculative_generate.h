// The sequential generation loop with speculation: each forward pass feeds
// the last chosen token and up to k proposed ones, and verify_proposals()
// (reference/sampling/verify_proposals.h) keeps the proposals the request's
// own sampler would have drawn. The definition the engine's speculative
// steps are tested against; for any chooser and any proposer it returns what
// generate() returns (tests/reference/test_speculative.cpp).
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "reference/generate.h"

namespace astrai {

// Up to `most` tokens guessed to follow `context` (the prompt and every
// token chosen so far); fewer or none when it has no guess. Deterministic:
// the same context gives the same proposals.
using TokenProposer = std::function<std::vector<int>(std::span<const int> context, int most)>;

struct SpeculationCounts {
  long forward_passes = 0;  // the prefill included
  long proposed = 0;        // proposals fed to the model
  long accepted = 0;        // proposals the sampler drew (kept)
};

// generate() with speculation: the same tokens for the same chooser (a
// stateful sampler included: it is called on the same rows in the same
// order), in fewer forward passes when proposals are kept. Proposals are
// capped so that no position past the context is fed and no more tokens are
// scored than max_new_tokens can use.
std::vector<int> generate_speculative(const ModelWeights& weights, std::span<const int> prompt,
                                      const GenerateOptions& options, const TokenChooser& choose,
                                      const TokenProposer& propose, SpeculationCounts* counts = nullptr);

}  // namespace astrai
