#include "reference/batch.h"

#include <stdexcept>
#include <string>

namespace astrai {

void check_batch(const ModelConfig& c, std::span<const BatchToken> batch) {
  for (const auto& t : batch) {
    if (t.token < 0 || t.token >= c.vocab_size)
      throw std::invalid_argument("forward: token id " + std::to_string(t.token) + " is outside the vocabulary of " +
                                  std::to_string(c.vocab_size));
    if (t.pos < 0 || t.pos >= c.max_seq_len)
      throw std::invalid_argument("forward: position " + std::to_string(t.pos) + " is outside the context of " +
                                  std::to_string(c.max_seq_len));
  }
}

}  // namespace astrai
