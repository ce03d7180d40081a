// Reasoning models (Qwen 3, QwQ, DeepSeek-R1) write their reasoning first,
// between <think> and </think>, then the answer. The chat APIs return the two
// apart: OpenAI's message.reasoning_content (and `reasoning`, vLLM's newer
// name), Anthropic's thinking blocks. Two implementations of one rule, so
// that each checks the other (tests/engine/chat_planning/test_reasoning_split.cpp):
// split_reasoning reads a whole output, ReasoningStream reads it piece by
// piece as it is generated, holding back only what may still become a tag.
//
// The rule (vLLM's Qwen 3 and DeepSeek-R1 parsers):
//   - starts_in_reasoning (the prompt ended inside an open <think>, as
//     DeepSeek-R1's template leaves it): the reasoning runs to the first
//     </think>, or to the end of the output when none comes;
//   - otherwise an output that starts with <think> (exactly: the model's
//     first bytes) reasons to the first </think> or the end; any other output
//     is all content, <think> tags later in it included.
// The tags are dropped; the text around them is kept byte for byte.
#pragma once

#include <string>
#include <string_view>

#include "engine/grammar/token_constraint.h"

namespace astrai {

// The marks around the thinking, "<think>" and "</think>": spelled here only.
// The split below, the grammar that applies after the thinking
// (ConstraintSpec::reasoning) and the template check take them from here.
const grammar::ReasoningMarkers& reasoning_markers();

// Whether a chat template writes reasoning between the markers (Qwen 3, QwQ,
// DeepSeek-R1): the reasoning is then split out of outputs.
bool template_has_reasoning(std::string_view chat_template);

struct ReasoningSplit {
  std::string reasoning;  // "" when there was none
  std::string content;
};

ReasoningSplit split_reasoning(std::string_view output, bool starts_in_reasoning);

// Whether a rendered prompt ends with a closed think block ("</think>" and
// only whitespace after it): the template turned thinking off (Qwen 3's
// enable_thinking false writes "<think>\n\n</think>\n\n"), so an output
// constraint applies from the output's first byte.
bool prompt_closes_reasoning(std::string_view prompt);

// Whether a rendered prompt ends inside an open <think> (its last <think>
// comes after its last </think>).
bool prompt_opens_reasoning(std::string_view prompt);

class ReasoningStream {
 public:
  explicit ReasoningStream(bool starts_in_reasoning)
      : state_(starts_in_reasoning ? State::Reasoning : State::Start) {}

  // What the next piece of output adds to each part. Joining every
  // feed()'s and finish()'s parts gives split_reasoning of the whole output.
  ReasoningSplit feed(std::string_view piece);
  // The output ended: what was held back.
  ReasoningSplit finish();

 private:
  enum class State { Start, Reasoning, Content };
  State state_;
  std::string held_;  // Start: a prefix of <think>; Reasoning: a possible start of </think>
};

}  // namespace astrai
