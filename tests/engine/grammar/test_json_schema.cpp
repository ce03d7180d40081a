// The JSON Schema compiler at the byte level: every random instance of a
// random schema (the test's own generator) is in the grammar; fixed cases at
// the boundaries; and each refused keyword names itself and its pointer.
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "engine/grammar/compile_constraint.h"
#include "engine/grammar/json_schema.h"
#include "tests/engine/grammar/random_schema.h"

using namespace astrai::grammar;

namespace {

Grammar schema_grammar(const std::string& schema) { return grammar_for({ConstraintSpec::Kind::JsonSchema, schema, {}}); }

}  // namespace

TEST_CASE("json schema: random instances of random schemas are in the grammar", "[grammar][json_schema]") {
  rc::prop("random schema", [](uint64_t seed) {
    astrai::test::SchemaGenerator gen(seed);
    const auto schema = gen.make_root();
    const Grammar g = schema_grammar(schema.dump());
    for (int i = 0; i < 20; ++i) {
      const std::string text = gen.instance(schema, schema);
      if (!grammar_matches(g, text)) RC_FAIL("schema " + schema.dump() + " refuses its instance " + text);
    }
  });
}

TEST_CASE("json schema: boundaries of the subset", "[grammar][json_schema]") {
  struct Case {
    const char* schema;
    std::vector<std::string> yes, no;
  };
  const std::vector<Case> cases = {
      {R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":2})", {"[1]", "[1,2]", "[ 1 , 2 ]"},
       {"[]", "[1,2,3]", "[1,]", "[01]"}},
      {R"({"type":"array","prefixItems":[{"type":"boolean"},{"type":"null"}],"items":false})", {"[]", "[true]", "[false,null]"},
       {"[null]", "[true,null,1]"}},
      {R"({"type":"string","minLength":2,"maxLength":3})", {R"("ab")", R"("a\"c")", R"("😀é中")", R"("\ud83d\ude00a")"},
       {R"("a")", R"("abcd")", R"("\ud83d\ude00")"}},
      {R"({"type":"string"})", {R"("")", R"("\\\/\b\f\n\r\t\u00e9")", "\"\x7f\""},
       {"\"\x01\"", R"("\ud800")", R"("\x")", "\"\xC3\"", "\"a"}},
      {R"({"type":"integer","minimum":-12,"exclusiveMaximum":120})", {"-12", "0", "9", "119", "-1"},
       {"-13", "120", "-0", "007", "1.0"}},
      {R"({"type":"integer","exclusiveMinimum":99,"maximum":1000})", {"100", "999", "1000"}, {"99", "1001", "0"}},
      // One-sided bounds reach the 18-digit limit (the fuzzer found 1e18 * 10 overflowing here).
      {R"({"type":"integer","exclusiveMinimum":-5})", {"-4", "999999999999999999", "123456789012345678"},
       {"-5", "1000000000000000000"}},
      {R"({"type":"integer","maximum":7})", {"7", "-999999999999999999"}, {"8", "-1000000000000000000"}},
      {R"({"type":"number"})", {"0", "-0.5", "1e5", "2.50E-07", "123456789"}, {"01", ".5", "1.", "1e", "+1", "1e100"}},
      {R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["b"]})",
       {R"({"b":""})", R"({"a":1,"b":"x"})", "{\n  \"a\": 1,\n  \"b\": \"x\"\n}"},
       {"{}", R"({"a":1})", R"({"b":"x","a":1})", R"({"b":"x","c":1})"}},
      {R"({"type":"object","properties":{"ab":{"type":"null"}},"additionalProperties":{"type":"boolean"}})",
       {"{}", R"({"ab":null})", R"({"ab":null,"a":true,"abc":false})", R"({"x":true})"},
       {R"({"ab":true})", R"({"x":null})", R"({"a":null,"ab":null})"}},
      {R"({"enum":["a\"b",1,null,[1,{"x":2}]],"type":["string","array"]})", {R"("a\"b")", R"([1,{"x":2}])"},
       {"1", "null"}},
      {R"({"type":"string","pattern":"^[a-c]+\\.\"$"})", {R"("ab.\"")"}, {R"("ab.")", R"("d.\"")"}},
      {R"({"type":"string","pattern":"\\d{2}"})", {R"("x12y")", R"("99")"}, {R"("x1y")"}},
      {R"({"$defs":{"t":{"type":"object","properties":{"c":{"type":"array","items":{"$ref":"#/$defs/t"}}},"required":["c"]}},"$ref":"#/$defs/t"})",
       {R"({"c":[]})", R"({"c":[{"c":[{"c":[]}]}]})"}, {R"({"c":[{}]})"}},
      {R"({"type":"integer","nullable":true})", {"null", "5"}, {"\"5\""}},
      {R"({"anyOf":[{"type":"integer"},{"const":"x"}]})", {"3", R"("x")"}, {R"("y")"}},
      {"{}", {"1", R"({"a":[null,true,{"b":"c"}]})"}, {"", "nul"}},
      {R"({"type":"object"})", {"{}", R"({"a":1})"}, {"[]"}},
      {R"({"type":"object","properties":{}})", {"{}"}, {R"({"a":1})"}},
  };
  for (const auto& c : cases) {
    const Grammar g = schema_grammar(c.schema);
    for (const auto& s : c.yes) {
      INFO(c.schema << " should accept " << s);
      CHECK(grammar_matches(g, s));
    }
    for (const auto& s : c.no) {
      INFO(c.schema << " should refuse " << s);
      CHECK_FALSE(grammar_matches(g, s));
    }
  }
  // Whitespace is bounded: kMaxWhitespace bytes between tokens, not one more.
  const Grammar g = schema_grammar(R"({"type":"array"})");
  CHECK(grammar_matches(g, "[" + std::string(kMaxWhitespace, ' ') + "]"));
  CHECK_FALSE(grammar_matches(g, "[" + std::string(kMaxWhitespace + 1, ' ') + "]"));
}

TEST_CASE("json object: any object, nothing else", "[grammar][json_schema]") {
  const Grammar g = grammar_for({ConstraintSpec::Kind::JsonObject, "", {}});
  for (const char* yes : {"{}", R"({"a":[1,{"b":null}],"":"\u00e9"})", "{ \"k\" : -1.5e3 }"}) CHECK(grammar_matches(g, yes));
  for (const char* no : {"[]", "1", R"({"a"})", R"({a:1})", "{"}) CHECK_FALSE(grammar_matches(g, no));
}

TEST_CASE("json schema: what is refused names the keyword and its pointer", "[grammar][json_schema]") {
  struct Case {
    const char* schema;
    const char* keyword;
    const char* pointer;
  };
  const std::vector<Case> cases = {
      {R"({"not":{"type":"string"}})", "not", "/not"},
      {R"({"type":"object","properties":{"a":{"not":{}}}})", "not", "/properties/a/not"},
      {R"({"type":"strnig"})", "type", "/type"},
      {R"({"type":["string",3]})", "type", "/type"},
      {R"({"$ref":"#/$defs/missing"})", "$ref", "/$ref"},
      {R"({"$ref":"http://example.com/s.json"})", "$ref", "/$ref"},
      {R"({"type":"array","items":{"$ref":"#/definitions/a"},"definitions":{}})", "$ref", "/items/$ref"},
      {R"({"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"},{"type":"null"}]}},"$ref":"#/$defs/a"})", "$ref", "/$defs/a"},
      {R"({"allOf":[{}]})", "allOf", "/allOf"},
      {R"({"type":"object","patternProperties":{"a":{}}})", "patternProperties", "/patternProperties"},
      {R"({"type":"array","uniqueItems":true})", "uniqueItems", "/uniqueItems"},
      {R"({"type":"array","items":[{}]})", "items", "/items"},
      {R"({"type":"array","minItems":3,"maxItems":2})", "minItems", "/minItems"},
      {R"({"type":"array","maxItems":100000})", "maxItems", "/maxItems"},
      {R"({"type":"string","minLength":-1})", "minLength", "/minLength"},
      {R"x({"type":"string","pattern":"(?=a)"})x", "pattern", "/pattern"},
      {R"({"type":"number","minimum":0.5})", "minimum", "/minimum"},
      {R"({"type":"integer","minimum":5,"maximum":4})", "maximum", "/maximum"},
      {R"({"properties":{"a/b~":{"type":"string","format":"email","if":{}}}})", "if", "/properties/a~1b~0/if"},
      {R"({"type":"string","enum":["a"],"maxLength":3})", "maxLength", "/maxLength"},
      {R"({"enum":[]})", "enum", "/enum"},
      {R"({"anyOf":[]})", "anyOf", "/anyOf"},
      {R"({"type":"string","enum":[1]})", "enum", "/enum"},
      {R"({"type":"object","properties":{"a":{"type":"integer","minimum":"3"}}})", "minimum", "/properties/a/minimum"},
  };
  for (const auto& c : cases) {
    INFO(c.schema);
    try {
      schema_grammar(c.schema);
      FAIL("accepted");
    } catch (const ConstraintError& e) {
      INFO(e.what());
      CHECK(e.keyword == c.keyword);
      CHECK(e.pointer == c.pointer);
    }
  }
  for (const char* bad : {"", "{", "[1,", "{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"a\":false},\"required\":[\"a\"]},\"minItems\":1}"})
    CHECK_THROWS_AS(schema_grammar(bad), ConstraintError);
  // A deep enum value (dump() would recurse) and a long property name (the
  // grammar of extra names nests per byte) are refused, not a stack overflow.
  CHECK_THROWS_AS(schema_grammar(R"({"enum":[)" + std::string(100000, '[') + std::string(100000, ']') + "]}"), ConstraintError);
  CHECK_THROWS_AS(schema_grammar(R"({"properties":{")" + std::string(200000, 'a') + R"(":{}},"additionalProperties":true})"),
                  ConstraintError);
  CHECK(grammar_matches(schema_grammar(R"({"properties":{")" + std::string(kMaxPropertyName, 'a') +
                                       R"(":{}},"additionalProperties":true})"),
                        R"({"a":1})"));
  // Nesting beyond the bound.
  std::string deep = "{}";
  for (int i = 0; i < kMaxSchemaDepth + 5; ++i) deep = R"({"type":"array","items":)" + deep + "}";
  CHECK_THROWS_AS(schema_grammar(deep), ConstraintError);
}
