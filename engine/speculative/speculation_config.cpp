#include "engine/speculative/speculation_config.h"

#include <stdexcept>

namespace astrai {

SpeculationConfig ngram_speculation(const NgramOptions& options) {
  if (const std::string why = options.invalid(); !why.empty())
    throw std::invalid_argument("ngram speculation: " + why);
  return {[options](std::span<const int> context, int most) { return propose_ngram(context, options, most); },
          options.tokens, "ngram"};
}

}  // namespace astrai
