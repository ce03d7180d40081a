// gpt-oss's harmony outputs read into reasoning, tool calls and content:
// parse_harmony (the whole output, by searching it) against HarmonyStream
// (piece by piece): two implementations of one rule, each the other's
// oracle. Three kinds of cases: hand-written outputs in the published format
// (OpenAI's harmony guide and gpt-oss's model card: analysis then final, a
// call with its recipient in the channel's header or the role's, a preamble,
// a built-in tool), fed whole, one byte at a time and in random pieces;
// conversations drawn at random whose parts are known from how they were
// drawn (a third reading of the rule); and random strings of markers, near
// markers and text, where the stream must equal the whole parse.
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <nlohmann/json.hpp>

#include "engine/chat_planning/harmony_output.h"
#include "tests/support/joined_streams.h"
#include "tests/support/random_cuts.h"

namespace astrai {

namespace {

struct Expected {
  std::string reasoning, content;
  std::vector<ParsedToolCall> calls;
};

void check_parts(const HarmonyParts& got, const Expected& want) {
  CHECK(got.reasoning == want.reasoning);
  CHECK(got.content == want.content);
  CHECK(got.calls == want.calls);
}

}  // namespace

TEST_CASE("parse_harmony: outputs in the published format, whole and streamed", "[chat][harmony]") {
  struct Case {
    std::string output;
    bool read_calls;
    Expected parts;
  };
  const std::vector<Case> cases = {
      // Reasoning, then the answer (the guide's first example; <|return|> is no text).
      {"<|channel|>analysis<|message|>User asks: \"What is 2 + 2?\" Simple arithmetic. Provide answer.<|end|>"
       "<|start|>assistant<|channel|>final<|message|>2 + 2 = 4.",
       true,
       {"User asks: \"What is 2 + 2?\" Simple arithmetic. Provide answer.", "2 + 2 = 4.", {}}},
      // A function call, the recipient in the channel's header, <|constrain|>json.
      {"<|channel|>analysis<|message|>Need to use function get_current_weather.<|end|>"
       "<|start|>assistant<|channel|>commentary to=functions.get_current_weather <|constrain|>json"
       "<|message|>{\"location\":\"San Francisco\"}",
       true,
       {"Need to use function get_current_weather.", "", {{"get_current_weather", "{\"location\":\"San Francisco\"}"}}}},
      // The recipient in the role's header (as the chat template renders past calls); arguments made compact.
      {"<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{ \"city\": \"Tokyo\",\n \"days\": 3 }",
       true,
       {"", "", {{"get_weather", "{\"city\":\"Tokyo\",\"days\":3}"}}}},
      // A preamble (commentary without a recipient) is shown to the user, then the call.
      {"<|channel|>analysis<|message|>Plan first.<|end|><|start|>assistant<|channel|>commentary<|message|>"
       "**Action plan**: look it up.<|end|><|start|>assistant<|channel|>commentary to=functions.lookup "
       "<|constrain|>json<|message|>{}",
       true,
       {"Plan first.", "**Action plan**: look it up.", {{"lookup", "{}"}}}},
      // A built-in tool (the browser) is the model's own work: reasoning.
      {"<|channel|>analysis to=browser.search code<|message|>{\"query\": \"gpt-oss\"}<|end|>"
       "<|start|>assistant<|channel|>final<|message|>Found it.",
       true,
       {"{\"query\": \"gpt-oss\"}", "Found it.", {}}},
      // No tools in the request: a call's body is content.
      {"<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"a\": 1}", false, {"", "{\"a\": 1}", {}}},
      // Arguments that are no JSON object stay content.
      {"<|channel|>commentary to=functions.f <|constrain|>json<|message|>[1, 2]", true, {"", "[1, 2]", {}}},
      {"<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"a\": ", true, {"", "{\"a\": ", {}}},
      // "functions." with no name is no call: a message to some other recipient.
      {"<|channel|>commentary to=functions. <|message|>{}", true, {"{}", "", {}}},
      // No header at all: the whole output is content; text between messages too.
      {"Just text, <|channel| not a marker.", true, {"", "Just text, <|channel| not a marker.", {}}},
      {"<|channel|>final<|message|>a<|end|>\n<|start|>assistant<|channel|>final<|message|>b", true, {"", "a\nb", {}}},
      // Cut by max_tokens: in a body, what came is its part's; in a header, nothing.
      {"<|channel|>analysis<|message|>Let me think", true, {"Let me think", "", {}}},
      {"<|channel|>analysis<|message|>Done.<|end|><|start|>assistant<|channel|>fin", true, {"Done.", "", {}}},
      {"<|channel|>analysis<|message|>x<|en", true, {"x<|en", "", {}}},
      // A second analysis message joins the first as it is.
      {"<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>analysis<|message|>b<|end|>", true,
       {"ab", "", {}}},
      {"", true, {"", "", {}}},
  };
  for (const Case& c : cases) {
    INFO("output " << c.output << ", read calls " << c.read_calls);
    check_parts(parse_harmony(c.output, c.read_calls), c.parts);
    check_parts(test::joined_harmony_stream({c.output}, c.read_calls), c.parts);
    check_parts(test::joined_harmony_stream(test::one_byte_pieces(c.output), c.read_calls), c.parts);
  }
}

namespace {

// Text without any whole marker: near markers, JSON-ish bytes, UTF-8.
std::string marker_free_text() {
  static const std::vector<std::string> fragments = {"a", " ", "\n", "é", "{", "}", "\"", ":", "<", "|", ">", "<|",
                                                     "|>", "<|en", "<|start", "channel|>", "message", "to=", "json"};
  std::string text;
  for (size_t i : *rc::gen::container<std::vector<size_t>>(rc::gen::inRange<size_t>(0, fragments.size())))
    text += fragments[i];
  // Drawn fragments can still join into a marker ("<|en" + ...): redraw those.
  RC_PRE(text.find(kHarmonyStart) == std::string::npos && text.find(kHarmonyChannel) == std::string::npos &&
         text.find(kHarmonyMessage) == std::string::npos && text.find(kHarmonyEnd) == std::string::npos);
  return text;
}

}  // namespace

TEST_CASE("parse_harmony and HarmonyStream on drawn conversations: the parts they were drawn from",
          "[chat][harmony][property]") {
  rc::prop("messages of every kind, the last perhaps cut short", [] {
    const bool read_calls = *rc::gen::arbitrary<bool>();
    const int messages = *rc::gen::inRange(0, 5);
    std::string output;
    Expected want;
    for (int m = 0; m < messages; ++m) {
      const int kind = *rc::gen::inRange(0, 5);  // analysis, final, preamble, call, built-in tool
      const std::string name = *rc::gen::element<std::string>("get_weather", "f", "lookup_2");
      // The first message's role is the prompt's; later ones say theirs. A
      // call's recipient goes in the channel's header or the role's.
      const bool in_role = kind == 3 && *rc::gen::arbitrary<bool>();
      std::string header = m == 0 && !in_role ? "" : "<|start|>assistant";
      if (in_role) header += " to=functions." + name;
      header += "<|channel|>";
      header += kind == 0 ? "analysis" : kind == 1 ? "final" : "commentary";
      if (kind == 3 && !in_role) header += " to=functions." + name + " <|constrain|>json";
      if (kind == 3 && in_role) header += " json";
      if (kind == 4) header = (m == 0 ? "" : "<|start|>assistant") + std::string("<|channel|>analysis to=python code");
      std::string body;
      bool call = false;
      if (kind == 3) {
        const int x = *rc::gen::inRange(-5, 5);
        body = *rc::gen::element<std::string>("{}", "{\"x\": X}", "{\"s\": \"<|\", \"n\": [X, {\"k\": null}]}", "nope");
        if (const size_t at = body.find('X'); at != std::string::npos) body.replace(at, 1, std::to_string(x));
        call = read_calls && body != "nope";
      } else {
        body = marker_free_text();
      }
      const bool last = m + 1 == messages;
      const bool cut = last && *rc::gen::arbitrary<bool>();  // max_tokens: no <|end|>
      output += header + "<|message|>" + body + (cut ? "" : "<|end|>");
      if (call) {
        want.calls.push_back({name, nlohmann::ordered_json::parse(body).dump()});
      } else if (kind == 0 || kind == 4) {
        want.reasoning += body;
      } else {
        want.content += body;
      }
    }
    const HarmonyParts whole = parse_harmony(output, read_calls);
    RC_ASSERT(whole.reasoning == want.reasoning);
    RC_ASSERT(whole.content == want.content);
    RC_ASSERT(whole.calls == want.calls);
    const HarmonyParts streamed = test::joined_harmony_stream(test::random_cuts(output), read_calls);
    RC_ASSERT(streamed.reasoning == want.reasoning);
    RC_ASSERT(streamed.content == want.content);
    RC_ASSERT(streamed.calls == want.calls);
  });
}

TEST_CASE("HarmonyStream joined equals parse_harmony, any output in any pieces", "[chat][harmony][property]") {
  rc::prop("fragments that make and break markers, split at random", [] {
    static const std::vector<std::string> fragments = {
        "<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|constrain|>", "assistant", "analysis", "final",
        "commentary", " to=functions.f", " to=browser.x", "json", "{}", "{\"a\":1}", "[", "<|", "|>", "<|st",
        "<|chan", "nel|>", "<|mess", "<|en", "d|>", "a", " ", "\n", "é"};
    std::string output;
    for (size_t i : *rc::gen::container<std::vector<size_t>>(rc::gen::inRange<size_t>(0, fragments.size())))
      output += fragments[i];
    const bool read_calls = *rc::gen::arbitrary<bool>();
    const HarmonyParts whole = parse_harmony(output, read_calls);
    const HarmonyParts streamed = test::joined_harmony_stream(test::random_cuts(output), read_calls);
    RC_ASSERT(streamed.reasoning == whole.reasoning);
    RC_ASSERT(streamed.content == whole.content);
    RC_ASSERT(streamed.calls == whole.calls);
    // Nothing made up: the parts are no longer than the output.
    RC_ASSERT(whole.reasoning.size() + whole.content.size() <= output.size());
  });
}

TEST_CASE("template_writes_harmony: gpt-oss's template, not ChatML's", "[chat][harmony]") {
  CHECK(template_writes_harmony("{{- \"<|start|>system<|message|>\" }}...<|channel|>final<|message|>"));
  CHECK_FALSE(template_writes_harmony("<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>"));
  CHECK_FALSE(template_writes_harmony("<|start_header_id|>{{ role }}<|end_header_id|>"));
}

}  // namespace astrai
