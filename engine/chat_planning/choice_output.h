// How one choice's generated text becomes a chat response's parts: the
// reasoning split out first (engine/chat_planning/reasoning_split.h), then the tool
// calls parsed out of what follows it (engine/chat_planning/tool_call_parser.h),
// the rest being the content; or, for gpt-oss, all three read out of its
// harmony messages (engine/chat_planning/harmony_output.h). Whole responses read the whole text; streams
// read it piece by piece, and their parts joined are the whole's (each
// reader's stream equals its whole parse, and the tool calls are read from
// the content the reasoning split leaves in both cases).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/chat_planning/harmony_output.h"
#include "engine/chat_planning/reasoning_split.h"
#include "engine/chat_planning/tool_call_parser.h"

namespace astrai {

struct OutputParsing {
  bool reasoning = false;            // split <think>...</think> out
  bool starts_in_reasoning = false;  // the prompt ended inside <think>
  ToolCallFamily tools = ToolCallFamily::None;  // None: no tool calls are read
  bool parallel_tool_calls = true;   // false: calls after the first are dropped
  // gpt-oss: the output is harmony messages, read for the reasoning and (when
  // tools is set) the calls by harmony_output.h instead of the two above.
  bool harmony = false;

  bool active() const { return reasoning || harmony || tools != ToolCallFamily::None; }
};

struct ChoiceParts {
  std::string reasoning;
  std::string content;
  std::vector<ParsedToolCall> calls;
};

ChoiceParts parse_choice_output(std::string_view text, const OutputParsing& how);

// What one piece of a streamed choice adds: reasoning, content, then the
// calls' pieces (tool_call_parser.h; a call read whole is one piece).
struct ChoiceStreamPart {
  std::string reasoning;
  std::string content;
  std::vector<ToolCallPiece> calls;
};

class ChoiceOutputStream {
 public:
  explicit ChoiceOutputStream(const OutputParsing& how)
      : how_(how), reasoning_(how.starts_in_reasoning), tool_calls_(how.tools),
        harmony_(how.tools != ToolCallFamily::None) {}

  ChoiceStreamPart feed(std::string_view piece);
  ChoiceStreamPart finish();

 private:
  ChoiceStreamPart from_split(ReasoningSplit split, bool last);
  ChoiceStreamPart from_harmony(HarmonyParts parts);
  // Passes on `piece` unless it belongs to a call parallel_tool_calls false drops.
  void add_call_piece(ToolCallPiece piece, ChoiceStreamPart& part);

  OutputParsing how_;
  ReasoningStream reasoning_;
  ToolCallStream tool_calls_;
  HarmonyStream harmony_;
  size_t calls_ = 0;          // calls started (parallel_tool_calls false keeps the first)
  bool dropping_call_ = false;  // the pieces coming belong to a dropped call
};

}  // namespace astrai
