// How many tokens a reasoning model may think for (a thinking budget:
// engine/grammar/thinking_budget.h), from what a request says: OpenAI's
// reasoning effort, Anthropic's budget_tokens, or nothing. docs/tool-calling.md
// ("Thinking budgets") has the table and why.
#pragma once

#include <optional>
#include <string_view>

namespace astrai {

// The efforts a request may name, as OpenAI spells them.
bool is_reasoning_effort(std::string_view effort);

// The budget of a request for `max_tokens` new tokens (at most what the
// context leaves after its prompt): `explicit_budget` when
// given (Anthropic's thinking.budget_tokens, taken as it is); else the
// effort's: none and minimal 0 (the thinking closes at once, where a template
// has no switch to turn it off), low 1024, medium 4096, high 16384 tokens,
// each at most half of max_tokens so that the answer keeps the other half;
// else, when the output is constrained (tool_choice required or named, a
// response format: a grammar after the thinking), half of max_tokens; else
// none (the model thinks as long as it likes, as vLLM and llama.cpp's server
// let it).
std::optional<int> thinking_budget(std::optional<int> explicit_budget, std::string_view effort, bool constrained,
                                   int max_tokens);

}  // namespace astrai
