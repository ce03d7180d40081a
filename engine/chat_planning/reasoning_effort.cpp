#include "engine/chat_planning/reasoning_effort.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace astrai {

namespace {

struct Effort {
  std::string_view name;
  int tokens;
};

// High is half of the 32,768 output tokens Qwen 3's model card advises for
// most queries; medium and low a quarter and a sixteenth of high. A choice,
// documented; a request that wants another budget says it in tokens
// (Anthropic's budget_tokens).
constexpr Effort kEfforts[] = {{"none", 0}, {"minimal", 0}, {"low", 1024}, {"medium", 4096}, {"high", 16384}};

}  // namespace

bool is_reasoning_effort(std::string_view effort) {
  return std::any_of(std::begin(kEfforts), std::end(kEfforts), [&](const Effort& e) { return e.name == effort; });
}

std::optional<int> thinking_budget(std::optional<int> explicit_budget, std::string_view effort, bool constrained,
                                   int max_tokens) {
  if (explicit_budget) return explicit_budget;
  const int half = std::max(max_tokens, 0) / 2;
  if (!effort.empty()) {
    const auto e = std::find_if(std::begin(kEfforts), std::end(kEfforts), [&](const Effort& x) { return x.name == effort; });
    if (e == std::end(kEfforts)) throw std::invalid_argument("unknown reasoning effort '" + std::string(effort) + "'");
    return std::min(e->tokens, half);
  }
  if (constrained) return half;
  return std::nullopt;
}

}  // namespace astrai
