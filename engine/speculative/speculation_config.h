// What the scheduler needs to speculate (docs/speculative-decoding.md): a
// proposer that guesses the next tokens of a decoding request, and how many
// it may guess per step. Each decoding task whose request allows it then
// feeds its last token and the proposals in one forward step (a short
// prefill row), samples every row with its own generator, and keeps the
// proposals its sampler drew (reference/sampling/verify_proposals.h): the
// tokens a request gets never change, only the steps they take.
#pragma once

#include <memory>
#include <string>

#include "engine/speculative/draft_model_proposer.h"
#include "engine/speculative/ngram_proposer.h"
#include "reference/speculative_generate.h"

namespace astrai {

struct SpeculationConfig {
  // Null: speculation off. Called on the scheduler thread with a task's
  // tokens (prompt and output); must return ids inside the model's
  // vocabulary (n-gram lookup returns ids of the context, which the
  // scheduler validated; a draft model shares the target's vocabulary).
  TokenProposer propose;
  int num_tokens = 0;  // proposals per step at most (k); a request may ask for fewer
  std::string method;  // "ngram" or "draft_model" (vLLM's names): for logs and /stats
  bool enabled() const { return propose != nullptr && num_tokens > 0; }
};

// N-gram prompt lookup with options.tokens proposals per step. Throws
// std::invalid_argument naming the field when options are invalid.
SpeculationConfig ngram_speculation(const NgramOptions& options);

// `config` whose proposer's guesses end before the first id outside
// [0, vocab): a draft model with a larger vocabulary never feeds the target
// an id it cannot embed (which would fail the whole batch).
SpeculationConfig guesses_within_vocabulary(SpeculationConfig config, int vocab);

// A draft model's greedy guesses, `tokens` per step at most. The proposer is
// shared by the config's copies and runs on the scheduler's thread. Throws
// std::invalid_argument when tokens is not positive.
SpeculationConfig draft_model_speculation(std::shared_ptr<DraftModelProposer> draft, int tokens);

}  // namespace astrai
