#include "reference/sampling/token_mask.h"

#include <bit>
#include <limits>
#include <stdexcept>
#include <string>

namespace astrai {

void apply_token_mask(std::span<float> row, std::span<const std::uint32_t> mask) {
  if (mask.size() != token_mask_words(row.size()))
    throw std::invalid_argument("sampling: a token mask of " + std::to_string(mask.size()) + " words for a row of " +
                                std::to_string(row.size()) + " logits (want " +
                                std::to_string(token_mask_words(row.size())) + ")");
  constexpr float masked = -std::numeric_limits<float>::infinity();
  for (std::size_t t = 0; t < row.size(); ++t)
    if (!token_allowed(mask, t)) row[t] = masked;
}

std::size_t allowed_tokens(std::span<const std::uint32_t> mask, std::size_t vocab) {
  std::size_t n = 0;
  const std::size_t full = vocab / 32;
  for (std::size_t w = 0; w < full && w < mask.size(); ++w) n += std::size_t(std::popcount(mask[w]));
  if (vocab % 32 != 0 && full < mask.size()) n += std::size_t(std::popcount(mask[full] & ((1u << (vocab % 32)) - 1u)));
  return n;
}

}  // namespace astrai
