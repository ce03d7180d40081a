// A reasoning model's thinking closed at a budget of tokens: OpenAI's
// reasoning effort and Anthropic's thinking.budget_tokens
// (docs/tool-calling.md, "Thinking budgets"). Without one, a thinking model
// under tool_choice "required" or a response format may think until
// max_tokens and never reach the answer its grammar constrains.
//
// A budget is a count of tokens, which no byte grammar can say, so it is a
// TokenConstraint of its own wrapped around the answer's (after_reasoning's
// grammar, reasoning_grammar.h, or none: any answer). It follows the output's
// bytes with the rule of engine/chat_planning/reasoning_split.h: the thinking
// is open when the prompt left it open, or when the output's first bytes are
// the open marker; it runs to the first close marker. Every token from the
// output's first until the close marker is complete counts against the
// budget (the open marker's too). Once `tokens` have been spent and the
// thinking is still open, only the close marker may follow: each next token
// must be a non-empty prefix of what is left of it (the tokens a trie walk
// along the marker finds, one for Qwen 3's "</think>"), and the output cannot
// end there. From the close on, the answer's constraint alone decides; it is
// fed every token from the first, so its state follows the same text.
#pragma once

#include <memory>

#include "engine/grammar/token_constraint.h"
#include "engine/grammar/token_vocabulary.h"

namespace astrai::grammar {

struct ThinkingBudget {
  int tokens = 0;            // the most tokens of thinking before the close is forced (>= 0)
  ReasoningMarkers markers;  // open and close (not empty); answer_open is not used
  bool starts_inside = false;  // the prompt ended inside an open thinking
};

// `answer` (nullptr: any text may follow the thinking) behind a thinking of
// at most budget.tokens tokens. Throws std::invalid_argument for a negative
// budget or an empty marker.
std::shared_ptr<const CompiledConstraint> with_thinking_budget(std::shared_ptr<const CompiledConstraint> answer,
                                                               const ThinkingBudget& budget,
                                                               const TokenVocabulary& vocabulary);

}  // namespace astrai::grammar
