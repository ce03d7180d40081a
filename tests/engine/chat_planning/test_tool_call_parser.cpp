// Tool-call parsers against recorded outputs in each family's format (the
// expected calls written out by hand from the format's documentation: the
// Qwen 2.5 / 3 and Hermes 2 Pro model cards, Meta's Llama 3.1 prompt format,
// Mistral's function-calling guide), whole and streamed. The stream is fed
// the whole output, one byte at a time (finer than any tokenization: every
// token boundary of any tokenizer is among the byte boundaries) and, by
// RapidCheck, outputs built from each family's fragments cut anywhere; joined,
// its pieces must equal the whole parse exactly.
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "engine/chat_planning/tool_call_parser.h"
#include "tests/support/joined_streams.h"
#include "tests/support/random_cuts.h"

namespace astrai {
namespace {

struct Recorded {
  std::string output;
  std::string content;
  std::vector<ParsedToolCall> calls;
};

void check_recorded(ToolCallFamily family, const std::vector<Recorded>& cases) {
  for (const Recorded& c : cases) {
    INFO(to_string(family) << " output: " << c.output);
    const ParsedToolCalls whole = parse_tool_calls(c.output, family);
    CHECK(whole.content == c.content);
    CHECK(whole.calls == c.calls);
    for (const auto& pieces : {std::vector<std::string>{c.output}, test::one_byte_pieces(c.output)}) {
      const ParsedToolCalls s = test::joined_tool_call_stream(pieces, family);
      CHECK(s.content == c.content);
      CHECK(s.calls == c.calls);
    }
  }
}

}  // namespace

TEST_CASE("Tool calls, hermes (Qwen 2.5 / 3, Hermes 2 Pro): recorded outputs, whole and byte by byte",
          "[tool_calls][hermes]") {
  check_recorded(
      ToolCallFamily::Hermes,
      {
          {"<tool_call>\n{\"name\": \"get_current_temperature\", \"arguments\": {\"location\": \"San Francisco, CA, USA\"}}\n</tool_call>",
           "",
           {{"get_current_temperature", R"({"location":"San Francisco, CA, USA"})"}}},
          // Qwen 2.5's parallel calls, one block each.
          {"<tool_call>\n{\"name\": \"get_current_temperature\", \"arguments\": {\"location\": \"San Francisco, CA, USA\"}}\n</tool_call>\n"
           "<tool_call>\n{\"name\": \"get_temperature_date\", \"arguments\": {\"location\": \"San Francisco, CA, USA\", \"date\": \"2024-10-01\"}}\n</tool_call>",
           "",
           {{"get_current_temperature", R"({"location":"San Francisco, CA, USA"})"},
            {"get_temperature_date", R"({"location":"San Francisco, CA, USA","date":"2024-10-01"})"}}},
          // Text before the call stays content.
          {"I'll check the weather for you.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
           "I'll check the weather for you.\n",
           {{"get_weather", R"({"city":"Paris"})"}}},
          // Hermes 2 Pro writes the arguments first.
          {"<tool_call>\n{\"arguments\": {\"symbol\": \"TSLA\"}, \"name\": \"get_stock_fundamentals\"}\n</tool_call>",
           "",
           {{"get_stock_fundamentals", R"({"symbol":"TSLA"})"}}},
          // After Qwen 3's reasoning (split off before): the newlines go.
          {"\n\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"café ☕\"}}\n</tool_call>",
           "",
           {{"search", R"({"query":"café ☕"})"}}},
          // No arguments; arguments as a JSON string.
          {"<tool_call>\n{\"name\": \"now\"}\n</tool_call>", "", {{"now", "{}"}}},
          {"<tool_call>\n{\"name\": \"f\", \"arguments\": \"{\\\"x\\\": 1}\"}\n</tool_call>", "", {{"f", R"({"x":1})"}}},
          // A call from its head on (streamed_call.h): a brace short after
          // the arguments is still the call (its stream has sent it); the
          // arguments minified, the model's number and escape spellings kept;
          // "parameters" for "arguments"; keys after the arguments skipped.
          {"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}\n</tool_call>",
           "",
           {{"get_weather", R"({"city":"Paris"})"}}},
          {"<tool_call>\n{ \"name\" : \"f\" ,\n \"arguments\" : {\n  \"a\" : [1, 2.50, -3e2],\n  \"b\": \"x \\u00e9 \\\" y\"\n}}\n</tool_call>",
           "",
           {{"f", R"({"a":[1,2.50,-3e2],"b":"x \u00e9 \" y"})"}}},
          {"<tool_call>{\"name\": \"f\", \"parameters\": {\"n\": 1}, \"id\": 7}</tool_call>Hi",
           "Hi",
           {{"f", R"({"n":1})"}}},
          // A call cut by max_tokens after its JSON: still a call; cut inside
          // its arguments: the call with the text written; cut before its
          // head is whole: text.
          {"<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n", "", {{"f", "{}"}}},
          {"Sure.<tool_call>\n{\"name\": \"f\", \"arguments\": {\"city\": \"Pa", "Sure.", {{"f", R"({"city":"Pa)"}}},
          {"<tool_call>\n{\"name\": \"f\", \"arguments\": ", "<tool_call>\n{\"name\": \"f\", \"arguments\": ", {}},
          {"<tool_call>\n{\"name\": \"f\", \"argu", "<tool_call>\n{\"name\": \"f\", \"argu", {}},
          // A string argument may hold "</tool_call>" (the grammar allows it):
          // the block ends at the tag after the JSON object.
          {"<tool_call>\n{\"name\": \"write\", \"arguments\": {\"text\": \"a</tool_call>b\"}}\n</tool_call>\nDone.",
           "\nDone.",
           {{"write", R"({"text":"a</tool_call>b"})"}}},
          // Not a lone JSON object before the tag: the first tag ends the block, which is text.
          {"<tool_call>\n{\"name\": \"f\"} and </tool_call>", "<tool_call>\n{\"name\": \"f\"} and </tool_call>", {}},
          // No name: text. A plain answer, and near-tags.
          {"<tool_call>{\"arguments\": {}}</tool_call>", "<tool_call>{\"arguments\": {}}</tool_call>", {}},
          {"The capital of France is Paris.", "The capital of France is Paris.", {}},
          {"Use <tool_ or <tool_calls> here", "Use <tool_ or <tool_calls> here", {}},
          {"\n\n", "\n\n", {}},
          {"", "", {}},
      });
}

TEST_CASE("Tool calls, llama3 (Llama 3.1-3.3 JSON): recorded outputs, whole and byte by byte", "[tool_calls][llama3]") {
  check_recorded(
      ToolCallFamily::Llama3,
      {
          {"{\"name\": \"get_current_conditions\", \"parameters\": {\"location\": \"San Francisco, CA\", \"unit\": \"Fahrenheit\"}}",
           "",
           {{"get_current_conditions", R"({"location":"San Francisco, CA","unit":"Fahrenheit"})"}}},
          {"<|python_tag|>{\"name\": \"spotify_trending_songs\", \"parameters\": {\"n\": \"5\"}}",
           "",
           {{"spotify_trending_songs", R"({"n":"5"})"}}},
          {"{\"name\": \"a\", \"parameters\": {\"x\": 1}}; {\"name\": \"b\", \"parameters\": {}}",
           "",
           {{"a", R"({"x":1})"}, {"b", "{}"}}},
          {"\n{\"name\": \"f\", \"arguments\": {\"s\": \"}{\\\"\"}}\n", "", {{"f", R"({"s":"}{\""})"}}},
          {"I don't have access to real-time data.", "I don't have access to real-time data.", {}},
          // Unclosed, not a call, junk after a call: all content.
          {"{\"name\": \"f\", \"parameters\": {\"x\": 1}", "{\"name\": \"f\", \"parameters\": {\"x\": 1}", {}},
          {"{\"answer\": 42}", "{\"answer\": 42}", {}},
          {"{\"name\": \"f\", \"parameters\": {}} and more", "{\"name\": \"f\", \"parameters\": {}} and more", {}},
          {"  ", "  ", {}},
      });
}

TEST_CASE("Tool calls, mistral ([TOOL_CALLS]): recorded outputs, whole and byte by byte", "[tool_calls][mistral]") {
  check_recorded(
      ToolCallFamily::Mistral,
      {
          {"[TOOL_CALLS] [{\"name\": \"get_current_weather\", \"arguments\": {\"location\": \"Paris, France\", \"format\": \"celsius\"}}]",
           "",
           {{"get_current_weather", R"({"location":"Paris, France","format":"celsius"})"}}},
          // As the engine's decoder shows it: [TOOL_CALLS] is a control token, not text.
          {"[{\"name\": \"get_current_weather\", \"arguments\": {\"location\": \"Paris\"}}, {\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}]",
           "",
           {{"get_current_weather", R"({"location":"Paris"})"}, {"get_time", R"({"tz":"CET"})"}}},
          {"Let me look that up.[TOOL_CALLS][{\"name\": \"search\", \"arguments\": {\"q\": \"x\"}}]",
           "Let me look that up.",
           {{"search", R"({"q":"x"})"}}},
          {"Bonjour !", "Bonjour !", {}},
          {"[1, 2, 3] is a list", "[1, 2, 3] is a list", {}},
          {"See [TOOL_CALLS] nothing", "See [TOOL_CALLS] nothing", {}},
          {"[TOOL_CALLS][]", "[TOOL_CALLS][]", {}},
      });
}

TEST_CASE("Tool-call streams joined equal the whole parse, any output in any pieces", "[tool_calls][property]") {
  const std::vector<std::pair<ToolCallFamily, std::vector<std::string>>> families = {
      {ToolCallFamily::Hermes,
       {"<tool_call>", "</tool_call>", "<tool_", "</tool", "\n", " ", "text", R"({"name": "f", "arguments": {"x": 1}})",
        R"({"name": "g"})", "{", "}", "\"", "é", R"({"name": "f", "arguments": {"s": "</tool_call>"}})",
        // heads and argument text, so that calls open, grow, and end or are cut
        R"({"name": "f", "arguments": )", R"({ "name":"g" , "parameters" :{)", R"("a")", ":", ",", "1 2", "[", "]",
        "\\", R"("x \" y")", "\t"}},
      {ToolCallFamily::Llama3,
       {"<|python_tag|>", "<|python", R"({"name": "f", "parameters": {"x": [1, 2]}})", "; ", ";", "{", "}", "\n", " ",
        "text", "\"", "\\"}},
      {ToolCallFamily::Mistral,
       {"[TOOL_CALLS]", "[TOOL_", "[", "]", R"({"name": "f", "arguments": {}})", ", ", "\n", " ", "text", "{", "}"}},
      {ToolCallFamily::None, {"<tool_call>", "text", "[TOOL_CALLS]", "{"}},
  };
  rc::prop("fragments of each family's format, cut at random", [&] {
    const auto& [family, fragments] = families[*rc::gen::inRange<size_t>(0, families.size())];
    const auto picks = *rc::gen::container<std::vector<size_t>>(rc::gen::inRange<size_t>(0, fragments.size()));
    std::string output;
    for (size_t i : picks) output += fragments[i];
    const ParsedToolCalls whole = parse_tool_calls(output, family);
    const ParsedToolCalls s = test::joined_tool_call_stream(test::random_cuts(output), family);
    RC_ASSERT(s.content == whole.content);
    RC_ASSERT(s.calls == whole.calls);
  });
}

// A hermes call with a head streams: its name as soon as the head is read
// (before any argument), then its arguments as the model writes them, so a
// byte-by-byte feed sends a piece per kept byte; a call without a head
// (arguments first) comes whole at its </tool_call>. A stream that held the
// call to its end passed the whole-equals-stream tests above.
TEST_CASE("A hermes call streams its name, then its arguments as they are written", "[tool_calls][hermes][stream]") {
  const std::string head = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": ";
  const std::string arguments = "{\"city\": \"Paris\"}";
  ToolCallStream stream(ToolCallFamily::Hermes);
  StreamedToolCalls part = stream.feed(head + "{");
  REQUIRE(part.calls.size() == 1);
  CHECK(part.calls[0] == ToolCallPiece{"get_weather", "{", false});
  part = stream.feed("\"ci");
  CHECK(part.calls == std::vector<ToolCallPiece>{{"", "\"ci", false}});
  part = stream.feed("ty\": \"Paris\"}");
  CHECK(part.calls == std::vector<ToolCallPiece>{{"", "ty\":\"Paris\"}", true}});
  part = stream.feed("}\n</tool_call>");
  CHECK(part.calls.empty());
  CHECK(part.content.empty());
  CHECK(stream.finish().calls.empty());

  size_t pieces = 0;
  const ParsedToolCalls joined =
      test::joined_tool_call_stream(test::one_byte_pieces(head + arguments + "}\n</tool_call>"), ToolCallFamily::Hermes, &pieces);
  CHECK(joined.calls == std::vector<ParsedToolCall>{{"get_weather", R"({"city":"Paris"})"}});
  CHECK(pieces == 1 + std::string(R"({"city":"Paris"})").size() - 1);  // the head with '{', then one per byte kept
  test::joined_tool_call_stream(
      test::one_byte_pieces("<tool_call>{\"arguments\": {\"city\": \"Paris\"}, \"name\": \"get_weather\"}</tool_call>"),
      ToolCallFamily::Hermes, &pieces);
  CHECK(pieces == 1);
}

// A string argument that ends in a backslash ("C:\\" in JSON, C:\ as text):
// the quote after the escaped backslash closes the string. A scanner that
// takes every quote after a backslash for an escaped one runs past the
// string's end: llama3's calls then never end and the output is content;
// hermes falls back to the first </tool_call>, which cuts the second case's
// block inside its "note" argument, so that call becomes content too.
TEST_CASE("Tool calls: a string argument ending in a backslash, hermes and llama3", "[tool_calls][escapes]") {
  check_recorded(ToolCallFamily::Hermes,
                 {{R"(<tool_call>
{"name": "list_dir", "arguments": {"path": "C:\\"}}
</tool_call>)",
                   "",
                   {{"list_dir", R"({"path":"C:\\"})"}}},
                  {R"(<tool_call>
{"name": "list_dir", "arguments": {"path": "C:\\", "note": "a </tool_call> b", "pattern": "\"*\\\\"}}
</tool_call>
<tool_call>
{"name": "list_dir", "arguments": {"path": "D:\\\\"}}
</tool_call>)",
                   "",
                   {{"list_dir", R"({"path":"C:\\","note":"a </tool_call> b","pattern":"\"*\\\\"})"},
                    {"list_dir", R"({"path":"D:\\\\"})"}}}});
  check_recorded(ToolCallFamily::Llama3,
                 {{R"({"name": "list_dir", "parameters": {"path": "C:\\"}})", "", {{"list_dir", R"({"path":"C:\\"})"}}},
                  {R"(<|python_tag|>{"name": "list_dir", "parameters": {"path": "C:\\"}}; {"name": "cd", "parameters": {"to": "\\"}})",
                   "",
                   {{"list_dir", R"({"path":"C:\\"})"}, {"cd", R"({"to":"\\"})"}}}});
}

TEST_CASE("The tool-call family is recognised in chat templates", "[tool_calls][family]") {
  CHECK(detect_tool_call_family("{{- '<tool_call>\\n' }}") == ToolCallFamily::Hermes);
  CHECK(detect_tool_call_family("{{ '[TOOL_CALLS]' }}") == ToolCallFamily::Mistral);
  CHECK(detect_tool_call_family("<|start_header_id|>{% if tools %}\"parameters\"{% endif %}") == ToolCallFamily::Llama3);
  CHECK(detect_tool_call_family("<|start_header_id|>user<|end_header_id|>") == ToolCallFamily::None);  // Llama 3: no tools
  CHECK(detect_tool_call_family("") == ToolCallFamily::None);
  for (const std::string& name : tool_call_family_names()) CHECK(to_string(*tool_call_family_named(name)) == name);
  CHECK_FALSE(tool_call_family_named("qwen").has_value());
}

}  // namespace astrai
