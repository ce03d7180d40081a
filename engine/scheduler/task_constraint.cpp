#include "engine/scheduler/task_constraint.h"

#include <algorithm>
#include <stdexcept>

#include "reference/sampling/token_mask.h"

namespace astrai {

void TaskConstraint::start(int vocab) {
  if (!state_) return;
  vocab_ = vocab;
  mask_.assign(token_mask_words(size_t(vocab)), 0u);
  state_->fill_next_token_mask(mask_);
  if (allowed_tokens(mask_, size_t(vocab)) == 0)
    throw std::invalid_argument("the output constraint allows no first token in this model's vocabulary");
}

TaskConstraint TaskConstraint::fork() const {
  TaskConstraint copy;
  if (!state_) return copy;
  copy.state_ = state_->fork();
  copy.mask_ = mask_;
  copy.vocab_ = vocab_;
  return copy;
}

TaskConstraint::Step TaskConstraint::advance(int token, std::span<const int> stop_tokens) {
  if (!state_) return Step::Continue;
  if (!state_->accept_token(token)) return Step::Rejected;
  if (state_->is_terminated()) return Step::Complete;
  state_->fill_next_token_mask(mask_);
  const size_t allowed = allowed_tokens(mask_, size_t(vocab_));
  const bool can_end = state_->can_end();
  if (allowed == 0) return can_end ? Step::Complete : Step::DeadEnd;
  // Only end-of-sequence can follow (every allowed token is a stop token):
  // as good as drawn, so the request ends here. Stop tokens are a few ids, so
  // a mask allowing more tokens than that is settled by the count alone.
  if (can_end && allowed <= stop_tokens.size()) {
    std::vector<int> stops(stop_tokens.begin(), stop_tokens.end());
    std::sort(stops.begin(), stops.end());
    stops.erase(std::unique(stops.begin(), stops.end()), stops.end());  // each allowed id counted once
    size_t stops_allowed = 0;
    for (int id : stops)
      if (id >= 0 && id < vocab_ && token_allowed(mask_, size_t(id))) ++stops_allowed;
    if (stops_allowed == allowed) return Step::Complete;
  }
  return Step::Continue;
}

}  // namespace astrai
