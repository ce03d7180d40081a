// One row of a forward batch: a token at a position of a sequence.
#pragma once

namespace astrai {

struct BatchToken {
  int token = 0;             // id to embed
  int seq = 0;               // sequence in the KV cache
  int pos = 0;               // position within that sequence
  bool want_logits = false;  // compute the classifier for this row
};

}  // namespace astrai
