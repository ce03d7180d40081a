// The speculative-decoding options `astrai serve` and `astrai generate`
// share (docs/speculative-decoding.md): --speculative ngram with vLLM's
// names for its parameters (num_speculative_tokens, prompt_lookup_max,
// prompt_lookup_min), or --draft-model PATH (llama.cpp's --model-draft) with
// --draft-tokenizer where its format needs one.
#pragma once

#include <optional>
#include <string>

#include "cli/arguments.h"
#include "engine/model_files/load_model.h"
#include "engine/speculative/speculation_config.h"

namespace astrai::cli {

struct SpeculativeChoice {
  SpeculationConfig ngram;      // enabled with --speculative ngram
  std::string draft_model;      // --draft-model: empty when none
  std::string draft_tokenizer;  // --draft-tokenizer: empty for the model's own
  int tokens = 0;               // --num-speculative-tokens
  bool enabled() const { return ngram.enabled() || !draft_model.empty(); }
};

void add_speculative_options(Arguments& args);
// Off unless --speculative names a method or --draft-model a model; throws
// std::invalid_argument naming the option.
SpeculativeChoice read_speculative_options(const Arguments& args);

// The draft model of `choice`, opened (its weights left in the file);
// nullopt without one. Throws what open_model throws.
std::optional<OpenedModel> open_draft_model(const SpeculativeChoice& choice);

// Throws std::invalid_argument saying what differs unless the draft's
// guesses mean the target's tokens: the same number of ids in both models
// and both tokenizers, and the same text for every id.
void check_draft_vocabulary(const Tokenizer& target, int target_vocab, const OpenedModel& draft);

}  // namespace astrai::cli
