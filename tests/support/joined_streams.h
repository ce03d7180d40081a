// Streams of parsed output (the tool-call parser's ToolCallStream, the
// reasoning split's ReasoningStream, gpt-oss's HarmonyStream) fed piece by piece and their parts
// joined, for the property they all share: the joined stream equals the
// parse of the whole text. The unit tests and the fuzz target use these.
#pragma once

#include <string>
#include <vector>

#include "engine/chat_planning/harmony_output.h"
#include "engine/chat_planning/reasoning_split.h"
#include "engine/chat_planning/tool_call_parser.h"

namespace astrai::test {

// One piece per byte: finer than any tokenization (every token boundary of
// any tokenizer is among the byte boundaries).
inline std::vector<std::string> one_byte_pieces(const std::string& text) {
  std::vector<std::string> out;
  for (const char c : text) out.emplace_back(1, c);
  return out;
}

// The tool-call stream's parts for `pieces`, then its finish(), joined.
inline ParsedToolCalls joined_tool_call_stream(const std::vector<std::string>& pieces, ToolCallFamily family) {
  ToolCallStream stream(family);
  ParsedToolCalls joined;
  auto add = [&](ParsedToolCalls part) {
    joined.content += part.content;
    for (auto& c : part.calls) joined.calls.push_back(std::move(c));
  };
  for (const std::string& p : pieces) add(stream.feed(p));
  add(stream.finish());
  return joined;
}

// The reasoning stream's parts for `pieces`, then its finish(), joined.
inline ReasoningSplit joined_reasoning_stream(const std::vector<std::string>& pieces, bool starts_in_reasoning) {
  ReasoningStream stream(starts_in_reasoning);
  ReasoningSplit joined;
  auto add = [&](const ReasoningSplit& part) {
    joined.reasoning += part.reasoning;
    joined.content += part.content;
  };
  for (const std::string& p : pieces) add(stream.feed(p));
  add(stream.finish());
  return joined;
}

// The harmony stream's parts for `pieces`, then its finish(), joined.
inline HarmonyParts joined_harmony_stream(const std::vector<std::string>& pieces, bool read_calls) {
  HarmonyStream stream(read_calls);
  HarmonyParts joined;
  auto add = [&](HarmonyParts part) {
    joined.reasoning += part.reasoning;
    joined.content += part.content;
    for (auto& c : part.calls) joined.calls.push_back(std::move(c));
  };
  for (const std::string& p : pieces) add(stream.feed(p));
  add(stream.finish());
  return joined;
}

}  // namespace astrai::test
