// One row of a forward batch: a token at a position of a sequence.
#pragma once

#include <span>

#include "reference/model_config.h"

namespace astrai {

struct BatchToken {
  int token = 0;             // id to embed
  int seq = 0;               // sequence in the KV cache
  int pos = 0;               // position within that sequence
  bool want_logits = false;  // compute the classifier for this row
};

// Throws std::invalid_argument naming the first row whose token id is outside
// the vocabulary or whose position is outside the context. Every executor
// checks its batch with this before touching memory.
void check_batch(const ModelConfig& config, std::span<const BatchToken> batch);

}  // namespace astrai
