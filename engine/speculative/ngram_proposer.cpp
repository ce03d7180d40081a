#include "engine/speculative/ngram_proposer.h"

#include <algorithm>
#include <stdexcept>

namespace astrai {

std::string NgramOptions::invalid() const {
  if (min_match < 1) return "min_match must be at least 1, not " + std::to_string(min_match);
  if (max_match < min_match)
    return "max_match (" + std::to_string(max_match) + ") must be at least min_match (" + std::to_string(min_match) + ")";
  if (tokens < 1) return "tokens must be at least 1, not " + std::to_string(tokens);
  return {};
}

std::vector<int> propose_ngram(std::span<const int> context, const NgramOptions& options, int most) {
  if (const std::string why = options.invalid(); !why.empty()) throw std::invalid_argument("ngram speculation: " + why);
  const long size = long(context.size()), want = std::min(options.tokens, most);
  if (want <= 0) return {};
  for (long n = std::min<long>(options.max_match, size - 1); n >= options.min_match; --n) {
    const auto suffix = context.subspan(size_t(size - n));
    // Latest first: a recent repeat predicts the continuation better than an old one.
    for (long j = size - n - 1; j >= 0; --j) {
      if (!std::equal(suffix.begin(), suffix.end(), context.begin() + j)) continue;
      const long from = j + n, to = std::min(size, from + want);
      return std::vector<int>(context.begin() + from, context.begin() + to);
    }
  }
  return {};
}

}  // namespace astrai
