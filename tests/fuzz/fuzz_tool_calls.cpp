// Fuzz target: the tool-call parsers, the reasoning split and gpt-oss's
// harmony reader, streamed against whole, on any bytes.
//
// Input layout: byte 0 picks the family (mod 4: none, hermes, llama3,
// mistral) and whether the output starts inside <think> (bit 2); then the
// output as pieces [length mod 32][bytes], the last taking what is left.
// The seeds (corpus/tool_calls) are recorded outputs of each family.
//
// Properties:
//  1. ToolCallStream's pieces joined equal parse_tool_calls of the whole text
//     (content byte for byte, calls name and arguments), whatever the cuts;
//  2. every call's name is not empty and its arguments are the JSON text of
//     an object, but for a hermes call with a head (streamed_call.h), whose
//     arguments are the model's object text minified, which starts with '{'
//     and has no whitespace outside strings, whole or cut short;
//     the stream's call pieces come in order (each call named first, ended);
//  3. ReasoningStream's parts joined equal split_reasoning of the whole, and
//     the parts are never longer together than the output;
//  4. HarmonyStream's parts joined equal parse_harmony of the whole (gpt-oss;
//     calls read when bit 3 is set), its calls as in 2.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/chat_planning/harmony_output.h"
#include "engine/chat_planning/reasoning_split.h"
#include "engine/chat_planning/tool_call_parser.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/support/joined_streams.h"

namespace astrai::fuzz {

int fuzz_tool_calls(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const ToolCallFamily family = std::vector<ToolCallFamily>{ToolCallFamily::None, ToolCallFamily::Hermes,
                                                            ToolCallFamily::Llama3, ToolCallFamily::Mistral}[data[0] % 4];
  const bool starts_in_reasoning = (data[0] & 4) != 0;
  std::vector<std::string> pieces;
  std::string output;
  for (size_t at = 1; at < size;) {
    const size_t length = data[at++] % 32;
    const size_t n = std::min(length, size - at);
    pieces.emplace_back(reinterpret_cast<const char*>(data + at), n);
    output += pieces.back();
    at += n;
  }

  const ParsedToolCalls joined = test::joined_tool_call_stream(pieces, family);
  const ParsedToolCalls whole = parse_tool_calls(output, family);
  check(joined.content == whole.content, "streamed content equals the whole parse's");
  check(joined.calls == whole.calls, "streamed calls equal the whole parse's");
  for (const ParsedToolCall& call : whole.calls) {
    check(!call.name.empty(), "a call has a name");
    const auto arguments = nlohmann::json::parse(call.arguments, nullptr, false);
    if (family != ToolCallFamily::Hermes) check(arguments.is_object(), "a call's arguments are a JSON object");
    else check(call.arguments.starts_with("{"), "a hermes call's arguments are an object's text");
  }

  const ReasoningSplit split = test::joined_reasoning_stream(pieces, starts_in_reasoning);
  const ReasoningSplit whole_split = split_reasoning(output, starts_in_reasoning);
  check(split.reasoning == whole_split.reasoning, "streamed reasoning equals the whole split's");
  check(split.content == whole_split.content, "streamed content equals the whole split's");
  check(whole_split.reasoning.size() + whole_split.content.size() <= output.size(), "the split adds no bytes");

  const bool read_calls = (data[0] & 8) != 0;
  const HarmonyParts harmony = test::joined_harmony_stream(pieces, read_calls);
  const HarmonyParts whole_harmony = parse_harmony(output, read_calls);
  check(harmony.reasoning == whole_harmony.reasoning, "streamed harmony reasoning equals the whole parse's");
  check(harmony.content == whole_harmony.content, "streamed harmony content equals the whole parse's");
  check(harmony.calls == whole_harmony.calls, "streamed harmony calls equal the whole parse's");
  for (const ParsedToolCall& call : whole_harmony.calls) {
    check(!call.name.empty(), "a harmony call has a name");
    check(nlohmann::json::parse(call.arguments, nullptr, false).is_object(), "a harmony call's arguments are an object");
  }
  return 0;
}

}  // namespace astrai::fuzz

ASTRAI_FUZZ_ENTRY(fuzz_tool_calls)
