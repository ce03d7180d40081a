#include "reference/sampling/verify_proposals.h"

namespace astrai {

Verification verify_proposals(std::span<const int> proposals, const std::function<Draw(size_t row)>& draw) {
  for (size_t i = 0;; ++i) {
    const Draw d = draw(i);
    if (d.ends || i == proposals.size() || d.token != proposals[i]) return {int(i), d.token, d.ends};
  }
}

}  // namespace astrai
