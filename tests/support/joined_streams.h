// Streams of parsed output (the tool-call parser's ToolCallStream, the
// reasoning split's ReasoningStream, gpt-oss's HarmonyStream) fed piece by piece and their parts
// joined, for the property they all share: the joined stream equals the
// parse of the whole text. The unit tests and the fuzz target use these.
#pragma once

#include <stdexcept>
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

// Calls' pieces joined into calls, checking their order: a call's first
// piece names it, no piece names a call while another is open, every call
// ends. Throws std::logic_error (a test failure, a fuzzer's crash) otherwise.
class CallPieceJoiner {
 public:
  void add(ToolCallPiece piece) {
    if (!piece.name.empty()) {
      if (open_) throw std::logic_error("a call named while call " + calls.back().name + " is open");
      calls.push_back({std::move(piece.name), ""});
      open_ = true;
    } else if (!open_) {
      throw std::logic_error("a call's piece without its name first");
    }
    calls.back().arguments += piece.arguments;
    if (piece.ends) open_ = false;
    ++pieces_;
  }
  void finish() const {
    if (open_) throw std::logic_error("call " + calls.back().name + " never ended");
  }
  size_t pieces() const { return pieces_; }

  std::vector<ParsedToolCall> calls;

 private:
  bool open_ = false;
  size_t pieces_ = 0;
};

// The tool-call stream's parts for `pieces`, then its finish(), joined (and
// how many call pieces it sent, when `call_pieces` is given).
inline ParsedToolCalls joined_tool_call_stream(const std::vector<std::string>& pieces, ToolCallFamily family,
                                               size_t* call_pieces = nullptr) {
  ToolCallStream stream(family);
  std::string content;
  CallPieceJoiner calls;
  auto add = [&](StreamedToolCalls part) {
    content += part.content;
    for (auto& c : part.calls) calls.add(std::move(c));
  };
  for (const std::string& p : pieces) add(stream.feed(p));
  add(stream.finish());
  calls.finish();
  if (call_pieces) *call_pieces = calls.pieces();
  return {std::move(content), std::move(calls.calls)};
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
