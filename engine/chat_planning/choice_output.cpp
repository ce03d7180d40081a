#include "engine/chat_planning/choice_output.h"

namespace astrai {

ChoiceParts parse_choice_output(std::string_view text, const OutputParsing& how) {
  ChoiceParts parts;
  if (how.harmony) {
    HarmonyParts read = parse_harmony(text, how.tools != ToolCallFamily::None);
    parts = {std::move(read.reasoning), std::move(read.content), std::move(read.calls)};
    if (!how.parallel_tool_calls && parts.calls.size() > 1) parts.calls.resize(1);
    return parts;
  }
  std::string content(text);
  if (how.reasoning) {
    ReasoningSplit split = split_reasoning(text, how.starts_in_reasoning);
    parts.reasoning = std::move(split.reasoning);
    content = std::move(split.content);
  }
  ParsedToolCalls parsed = parse_tool_calls(content, how.tools);
  parts.content = std::move(parsed.content);
  parts.calls = std::move(parsed.calls);
  if (!how.parallel_tool_calls && parts.calls.size() > 1) parts.calls.resize(1);
  return parts;
}

void ChoiceOutputStream::add_call_piece(ToolCallPiece piece, ChoiceStreamPart& part) {
  if (!piece.name.empty()) dropping_call_ = !how_.parallel_tool_calls && calls_++ > 0;
  if (!dropping_call_) part.calls.push_back(std::move(piece));
}

ChoiceStreamPart ChoiceOutputStream::from_split(ReasoningSplit split, bool last) {
  ChoiceStreamPart part;
  part.reasoning = std::move(split.reasoning);
  StreamedToolCalls parsed = tool_calls_.feed(split.content);
  if (last) {
    StreamedToolCalls tail = tool_calls_.finish();
    parsed.content += tail.content;
    for (auto& c : tail.calls) parsed.calls.push_back(std::move(c));
  }
  part.content = std::move(parsed.content);
  for (auto& c : parsed.calls) add_call_piece(std::move(c), part);
  return part;
}

ChoiceStreamPart ChoiceOutputStream::from_harmony(HarmonyParts read) {
  ChoiceStreamPart part{std::move(read.reasoning), std::move(read.content), {}};
  for (auto& c : read.calls) add_call_piece({std::move(c.name), std::move(c.arguments), true}, part);
  return part;
}

ChoiceStreamPart ChoiceOutputStream::feed(std::string_view piece) {
  if (how_.harmony) return from_harmony(harmony_.feed(piece));
  if (!how_.reasoning) return from_split({"", std::string(piece)}, false);
  return from_split(reasoning_.feed(piece), false);
}

ChoiceStreamPart ChoiceOutputStream::finish() {
  if (how_.harmony) return from_harmony(harmony_.finish());
  if (!how_.reasoning) return from_split({}, true);
  return from_split(reasoning_.finish(), true);
}

}  // namespace astrai
