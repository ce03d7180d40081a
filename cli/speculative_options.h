// The speculative-decoding options `astrai serve` and `astrai generate`
// share (docs/speculative-decoding.md): --speculative ngram with vLLM's
// names for its parameters (num_speculative_tokens, prompt_lookup_max,
// prompt_lookup_min).
#pragma once

#include "cli/arguments.h"
#include "engine/speculative/speculation_config.h"

namespace astrai::cli {

void add_speculative_options(Arguments& args);
// Off unless --speculative names a method; throws std::invalid_argument
// naming the option.
SpeculationConfig read_speculative_options(const Arguments& args);

}  // namespace astrai::cli
