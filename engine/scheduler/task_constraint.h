// A task's constraint (engine/grammar/token_constraint.h: a JSON schema, a
// regex, a list of choices, compiled for the model's vocabulary): its state
// and the mask of the tokens it allows next, kept one step ahead.
//
// The mask is filled once before the first token (start()) and once after
// each generated token (advance()), on the scheduler thread, so the plan of
// the next step only points at it (RowSampling::mask) and a preempted task
// keeps it. A task without a constraint has no state and an empty mask: it
// costs nothing per step.
//
// What ends a constrained request (docs/structured-outputs.md, "The plumbing"):
//   Complete  the output so far is a complete match and nothing can follow
//             (is_terminated), or only end-of-sequence tokens can and they
//             are the request's stop tokens: the request ends now, as at an
//             EOS, without spending a step to draw the EOS
//             (FinishReason::ConstraintComplete; the API says "stop").
//   DeadEnd   the constraint allows no token and is not a complete match: no
//             token can be drawn (FinishReason::Error, naming it).
//   Rejected  the constraint refused the drawn token, which the mask should
//             have made impossible (FinishReason::Error, naming the token).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/grammar/token_constraint.h"

namespace astrai {

class TaskConstraint {
 public:
  enum class Step { Continue, Complete, DeadEnd, Rejected };

  TaskConstraint() = default;
  explicit TaskConstraint(std::unique_ptr<grammar::TokenConstraint> state) : state_(std::move(state)) {}

  bool active() const { return state_ != nullptr; }
  // Sizes the mask for `vocab` tokens and fills it for the first token.
  // Throws std::invalid_argument when the constraint allows no first token
  // (the request is refused before it runs).
  void start(int vocab);
  // The token the task just generated: advances the state over it and fills
  // the mask for the next one. `stop_tokens`: the request's (see Complete above).
  Step advance(int token, std::span<const int> stop_tokens);
  // What the next token's draw must respect (empty without a constraint).
  std::span<const std::uint32_t> mask() const { return mask_; }
  // An independent copy (state and mask): speculation advances one through
  // the proposed tokens for the masks of the rows after them, leaving the
  // task's own state where its accepted tokens put it.
  TaskConstraint fork() const;

 private:
  std::unique_ptr<grammar::TokenConstraint> state_;
  std::vector<std::uint32_t> mask_;
  int vocab_ = 0;
};

}  // namespace astrai
