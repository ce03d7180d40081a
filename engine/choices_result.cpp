#include "engine/choices_result.h"

namespace astrai {

std::vector<int> ChoicesResult::task_ids() const {
  std::vector<int> ids;
  for (const auto& choice : choices) ids.push_back(choice->task_id());
  return ids;
}

std::vector<TaskOutput> ChoicesResult::wait() const {
  std::vector<TaskOutput> outputs;
  for (const auto& choice : choices) outputs.push_back(choice->wait());
  return outputs;
}

std::optional<std::vector<TaskOutput>> ChoicesResult::wait_for(std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<TaskOutput> outputs;
  for (const auto& choice : choices) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    auto output = choice->wait_for(std::max(left, std::chrono::milliseconds(0)));
    if (!output) return std::nullopt;
    outputs.push_back(std::move(*output));
  }
  return outputs;
}

ChoicesUsage usage_of(const std::vector<TaskOutput>& outputs) {
  ChoicesUsage usage;
  if (outputs.empty()) return usage;
  // Every choice reports the same prompt; the hit is the first choice's (the
  // others forked the prompt from it and report none).
  usage.prompt_tokens = outputs.front().prompt_tokens;
  for (const TaskOutput& out : outputs) {
    usage.cached_prompt_tokens = std::max(usage.cached_prompt_tokens, out.cached_prompt_tokens);
    usage.completion_tokens += int(out.tokens.size());
  }
  return usage;
}

}  // namespace astrai
