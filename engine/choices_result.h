// The caller's handle on a request for n choices of one prompt
// (GenerationRequest::n, InferenceEngine::generate_choices): one
// GenerateResult per choice, in choice order, and the request's usage with
// the prompt counted once, as OpenAI's and vLLM's `n` report it.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "engine/generate_result.h"

namespace astrai {

// OpenAI's usage of an n-choice request: the prompt once, the choices' tokens summed.
struct ChoicesUsage {
  int prompt_tokens = 0;
  int cached_prompt_tokens = 0;  // prompt tokens a prefix-cache hit saved (once, too)
  int completion_tokens = 0;
};

struct ChoicesResult {
  // choices[i] is choice i: its TaskOutput and TokenEvents carry index i.
  std::vector<std::shared_ptr<GenerateResult>> choices;

  // The scheduler's task ids, one per choice (InferenceEngine::cancel(const
  // ChoicesResult&) cancels them all).
  std::vector<int> task_ids() const;
  // Blocks until every choice has ended; outputs in choice order.
  std::vector<TaskOutput> wait() const;
  // The same with one deadline for all; nullopt on timeout.
  std::optional<std::vector<TaskOutput>> wait_for(std::chrono::milliseconds timeout) const;
};

ChoicesUsage usage_of(const std::vector<TaskOutput>& outputs);

}  // namespace astrai
