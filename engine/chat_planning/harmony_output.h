// gpt-oss writes its output as harmony messages (OpenAI's format; the
// prompt's template ends with "<|start|>assistant"):
//   <|channel|>analysis<|message|>REASONING<|end|>
//   <|start|>assistant<|channel|>final<|message|>ANSWER
// or, for a tool call, a message to a recipient (in the channel's header or
// the role's) whose body is the arguments:
//   <|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{"x": 1}
//   <|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>{"x": 1}
// The turn ends with <|return|> or <|call|>, which end the generation and are
// no text (engine/tokenizer/harmony_tokens.h). This reads such an output into
// the chat APIs' parts. Two implementations of one rule, each checking the
// other (tests/engine/chat_planning/test_harmony_output.cpp): parse_harmony
// reads a whole output by searching it, HarmonyStream reads it piece by piece
// as it is generated, holding back only what may still become a marker.
//
// The rule:
//   - A message starts at <|start|> or <|channel|> (the first message's role
//     is in the prompt). Its header runs to the first <|message|> after that,
//     its body from there to the first <|end|> or the end of the output. A
//     header the output never finishes is dropped (it is no text).
//   - The channel is the header's first word after <|channel|>; the recipient
//     the first word after "to=" (a word ends at whitespace or '<').
//   - The body goes to: a tool call when the recipient is functions.NAME,
//     tool calls are read and the body is a JSON object (its arguments,
//     compact, keys in the model's order; otherwise the body is content, as
//     the other families leave a malformed call); the reasoning for the
//     analysis channel and for a message to any other recipient (a built-in
//     tool's call is the model's own work); the content otherwise (final,
//     commentary without a recipient: a preamble the user is shown, and a
//     channel this reader does not know).
//   - Text outside every message (before the first, between <|end|> and the
//     next start) is content.
//   - Each part is its messages' bodies joined as they are, nothing between.
// vLLM and llama.cpp read harmony outputs into the same three parts.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/chat_planning/tool_call_parser.h"
#include "engine/grammar/token_constraint.h"

namespace astrai {

// The harmony markers an output's text holds (harmony_tokens.h's text markers).
inline constexpr std::string_view kHarmonyStart = "<|start|>", kHarmonyChannel = "<|channel|>",
                                  kHarmonyMessage = "<|message|>", kHarmonyEnd = "<|end|>";

// Where a message's body goes (the rule above).
enum class HarmonyPart { Reasoning, Content, Call };

struct HarmonyParts {
  std::string reasoning;
  std::string content;
  std::vector<ParsedToolCall> calls;  // in the order the model wrote them
};

// read_calls false (the request has no tools): messages to functions are content.
HarmonyParts parse_harmony(std::string_view output, bool read_calls);

// Whether a chat template renders harmony messages (gpt-oss's): outputs are
// then read by this rule.
bool template_writes_harmony(std::string_view chat_template);

// What an output grammar follows on gpt-oss (ConstraintSpec::reasoning,
// Start::AfterOptionalReasoning): an optional analysis message, closed by
// "<|end|><|start|>assistant", then the answer: constrained text opens the
// final channel ("<|channel|>final<|message|>"); calls (answer_is_calls)
// open their own message, as the tool syntax spells it (tool_call_formats.cpp).
grammar::ReasoningMarkers harmony_markers(bool answer_is_calls);

class HarmonyStream {
 public:
  explicit HarmonyStream(bool read_calls) : read_calls_(read_calls) {}

  // What the next piece of output adds to each part. Joining every feed()'s
  // and finish()'s parts gives parse_harmony of the whole output.
  HarmonyParts feed(std::string_view piece);
  // The output ended: what was held back.
  HarmonyParts finish();

 private:
  enum class State { Outside, Header, Body };
  void step(HarmonyParts& out);
  void end_message(HarmonyParts& out);

  bool read_calls_;
  State state_ = State::Outside;
  HarmonyPart part_ = HarmonyPart::Content;  // Body: where it goes
  // Outside: a possible start of a marker; Header: the header so far; Body:
  // a possible <|end|>, or a call's whole body.
  std::string held_;
  std::string call_name_;
  size_t searched_ = 0;  // Header, a call's Body: held_ before this holds no start of their marker
};

}  // namespace astrai
