#include "engine/speculative/speculation_config.h"

#include <algorithm>
#include <stdexcept>

namespace astrai {

SpeculationConfig ngram_speculation(const NgramOptions& options) {
  if (const std::string why = options.invalid(); !why.empty())
    throw std::invalid_argument("ngram speculation: " + why);
  return {[options](std::span<const int> context, int most) { return propose_ngram(context, options, most); },
          options.tokens, "ngram"};
}

SpeculationConfig guesses_within_vocabulary(SpeculationConfig config, int vocab) {
  if (!config.enabled()) return config;
  config.propose = [inner = std::move(config.propose), vocab](std::span<const int> context, int most) {
    std::vector<int> guesses = inner(context, most);
    guesses.erase(std::find_if(guesses.begin(), guesses.end(), [vocab](int id) { return id < 0 || id >= vocab; }),
                  guesses.end());
    return guesses;
  };
  return config;
}

SpeculationConfig draft_model_speculation(std::shared_ptr<DraftModelProposer> draft, int tokens) {
  if (!draft) throw std::invalid_argument("draft model speculation: no draft model");
  if (tokens < 1) throw std::invalid_argument("draft model speculation: tokens must be at least 1");
  return {[draft](std::span<const int> context, int most) { return draft->propose(context, most); }, tokens,
          "draft_model"};
}

}  // namespace astrai
