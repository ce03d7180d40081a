// Proposers for speculation tests, shared by the engine's and the CUDA
// executor's batching tests: n-gram lookup (the real one), and proposers
// that read the reference's answers, so that a test controls how many
// proposals are right: all (Right), none (Wrong), or the ones before a wrong
// one at a place that varies with the context (Mixed); and a draft model
// (engine/speculative/draft_model_proposer.h) on the reference executor
// whose weights are the harness's tiny model (Draft): the target itself in
// the engine's tests, whose greedy requests then keep every guess.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "engine/speculative/speculation_config.h"
#include "tests/engine/scheduler/engine_harness.h"

namespace astrai::test {

enum class Guess { Ngram, Right, Wrong, Mixed, Draft };
inline const std::vector<Guess> kGuesses = {Guess::Ngram, Guess::Right, Guess::Wrong, Guess::Mixed, Guess::Draft};
const char* guess_name(Guess g);

// Each request's prompt and the tokens the reference gives it.
using Answers = std::vector<std::pair<std::vector<int>, std::vector<int>>>;
std::shared_ptr<const Answers> answers_of(const std::vector<PlannedRequest>& requests);

// The rest of the expected tokens of the answer whose prompt and first
// expected tokens `context` is; nullopt when none is.
std::optional<std::vector<int>> continuation(const Answers& answers, std::span<const int> context);

// k proposals per step at most, guessed as `guess` says, for a model of
// `vocab` tokens (a wrong guess is a right one shifted, kept inside it).
SpeculationConfig speculation(Guess guess, std::shared_ptr<const Answers> answers, int vocab, int k = 4);

// A draft model of `weights` on the reference executor, k guesses per step,
// with a paged cache (4-token pages) of room for `contexts` whole contexts
// and `sequences` sequences at most: fewer than the running requests make
// it evict.
SpeculationConfig draft_speculation(std::shared_ptr<const ModelWeights> weights, int k = 4, int contexts = 2,
                                    int sequences = 3);

}  // namespace astrai::test
