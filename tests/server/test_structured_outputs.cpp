// Structured outputs over real HTTP (issue 27): response_format (json_schema,
// json_object, text), vLLM's structured_outputs and guided_* fields, each
// enforced on the tiny model's sampled output. Oracles independent of the
// grammar: nlohmann-json parses the text and the test checks the schema's few
// rules itself; std::regex full-matches a regex; a choice is one of the list.
// Bad shapes are 422 naming the field; schemas the grammar refuses are 400
// naming the keyword and its pointer.
#include <regex>
#include <set>
#include <string>

#include <catch2/catch.hpp>

#include "tests/server/server_fixture.h"

namespace astrai::test {
namespace {


// A schema whose every instance is short (no free-length string or number),
// so that a random model always finishes it.
const json kColorSchema = json::parse(R"({
  "type": "object",
  "properties": {"color": {"enum": ["red", "green", "blue"]}, "ok": {"type": "boolean"}},
  "required": ["color", "ok"],
  "additionalProperties": false
})");

json sampled_body(uint64_t seed, bool stream = false) {
  json body = openai_body("Reply in JSON", 120, stream);
  body["temperature"] = 1.0;
  body["seed"] = seed;
  return body;
}

json json_schema_format(const json& schema, bool strict = true) {
  return {{"type", "json_schema"}, {"json_schema", {{"name", "reply"}, {"schema", schema}, {"strict", strict}}}};
}

// The schema's rules, checked by hand on the parsed reply.
void check_color_reply(const std::string& content) {
  INFO(content);
  const json reply = json::parse(content, nullptr, false);
  REQUIRE(reply.is_object());
  CHECK(reply.size() == 2);
  REQUIRE(reply.contains("color"));
  CHECK(std::set<std::string>{"red", "green", "blue"}.count(reply["color"].get<std::string>()) == 1);
  REQUIRE(reply.contains("ok"));
  CHECK(reply["ok"].is_boolean());
}

std::string content_of(const Reply& reply, int index = 0) {
  INFO(reply.body);
  REQUIRE(reply.status == 200);
  return reply.body_json()["choices"][index]["message"]["content"].get<std::string>();
}

// The streamed deltas of choice 0, joined, and its finish reason.
std::pair<std::string, std::string> streamed(const Reply& reply) {
  REQUIRE(reply.status == 200);
  std::string text, reason;
  for (const SseEvent& e : parse_sse(reply.body)) {
    if (e.data == "[DONE]") continue;
    const json chunk = json::parse(e.data);
    for (const json& c : chunk["choices"]) {
      if (c["delta"].contains("content") && c["delta"]["content"].is_string()) text += c["delta"]["content"].get<std::string>();
      if (c.contains("finish_reason") && c["finish_reason"].is_string()) reason = c["finish_reason"].get<std::string>();
    }
  }
  return {text, reason};
}

void check_400_naming(const Reply& reply, const std::string& keyword, const std::string& pointer) {
  INFO(reply.body);
  REQUIRE(reply.status == 400);
  const std::string message = reply.body_json()["error"]["message"].get<std::string>();
  CHECK(message.find("\"" + keyword + "\"") != std::string::npos);
  CHECK(message.find("\"" + pointer + "\"") != std::string::npos);
}

void check_422(const Reply& reply, const json& loc) {
  INFO(reply.body);
  REQUIRE(reply.status == 422);
  bool found = false;
  const json body = reply.body_json();
  for (const json& e : body["detail"]) found = found || e["loc"] == loc;
  CHECK(found);
}

}  // namespace

TEST_CASE("response_format json_schema: every sampled reply is an instance; streamed equals whole",
          "[server][structured]") {
  TestServer server;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    json body = sampled_body(seed);
    body["response_format"] = json_schema_format(kColorSchema, seed % 2 == 0);  // strict false is enforced too
    const Reply whole = post(server, kChatPath, body);
    const std::string content = content_of(whole);
    check_color_reply(content);
    CHECK(whole.body_json()["choices"][0]["finish_reason"] == "stop");
    body["stream"] = true;
    const auto [text, reason] = streamed(post(server, kChatPath, body));
    CHECK(text == content);
    CHECK(reason == "stop");
  }
  // The second and later requests with one schema share its compiled form.
  CHECK(server.model()->constraints->size() == 1);
  CHECK(server.model()->constraints->hits() >= 5);
}

TEST_CASE("json_object, guided_json and structured_outputs.json give JSON objects", "[server][structured]") {
  TestServer server;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    json body = sampled_body(seed);
    body["response_format"] = {{"type", "json_object"}};
    body["max_tokens"] = 400;
    const Reply reply = post(server, kChatPath, body);
    const std::string content = content_of(reply);
    if (reply.body_json()["choices"][0]["finish_reason"] == "stop") {  // a random model may also run out of tokens
      INFO(content);
      CHECK(json::parse(content, nullptr, false).is_object());
    }
  }
  json guided = sampled_body(9);
  guided["guided_json"] = kColorSchema;
  check_color_reply(content_of(post(server, kChatPath, guided)));
  json so = sampled_body(10);
  so["structured_outputs"] = {{"json", kColorSchema.dump()}};  // the schema's text is accepted too
  check_color_reply(content_of(post(server, kChatPath, so)));
  json text = sampled_body(11);
  text["response_format"] = {{"type", "text"}};
  text["max_tokens"] = 5;
  CHECK(post(server, kChatPath, text).status == 200);  // no constraint
}

TEST_CASE("regex and choice constraints: full matches and listed strings, with n > 1 and logprobs",
          "[server][structured]") {
  TestServer server;
  const std::string pattern = "[0-9]{3}-[a-z]{2}(x|yz)?";
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    json body = sampled_body(seed);
    body[seed % 2 ? "guided_regex" : "structured_outputs"] =
        seed % 2 ? json(pattern) : json{{"regex", pattern}};
    const std::string content = content_of(post(server, kChatPath, body));
    INFO(content);
    CHECK(std::regex_match(content, std::regex(pattern)));
  }
  const std::set<std::string> choices = {"yes", "no", "maybe not"};
  json body = sampled_body(77);
  body["n"] = 3;
  body["logprobs"] = true;
  body["top_logprobs"] = 2;
  body["structured_outputs"] = {{"choice", json(choices)}};
  const Reply reply = post(server, kChatPath, body);
  for (int i = 0; i < 3; ++i) {
    CHECK(choices.count(content_of(reply, i)) == 1);
    const json choice = reply.body_json()["choices"][i];
    CHECK(choice["logprobs"]["content"].size() >= 1);
    CHECK(choice["finish_reason"] == "stop");
  }
  json guided = sampled_body(78);
  guided["guided_choice"] = json(choices);
  CHECK(choices.count(content_of(post(server, kChatPath, guided))) == 1);
}

TEST_CASE("structured output fields: bad shapes are 422 naming the field, refused schemas 400 naming the keyword",
          "[server][structured][errors]") {
  TestServer server;
  const json loc = json::array({"body"});
  auto with = [](const char* field, json value) {
    json body = openai_body("hi", 5);
    body[field] = std::move(value);
    return body;
  };
  check_422(post(server, kChatPath, with("response_format", "json")), json::array({"body", "response_format"}));
  check_422(post(server, kChatPath, with("response_format", {{"type", "xml"}})),
            json::array({"body", "response_format", "type"}));
  check_422(post(server, kChatPath, with("response_format", {{"type", "json_schema"}})),
            json::array({"body", "response_format", "json_schema"}));
  check_422(post(server, kChatPath, with("response_format", json_schema_format(json::array({1})))),
            json::array({"body", "response_format", "json_schema", "schema"}));
  check_422(post(server, kChatPath, with("guided_choice", json::array())), json::array({"body", "guided_choice"}));
  check_422(post(server, kChatPath, with("guided_choice", json::array({"a", 1}))),
            json::array({"body", "guided_choice", 1}));
  check_422(post(server, kChatPath, with("guided_regex", 5)), json::array({"body", "guided_regex"}));
  check_422(post(server, kChatPath, with("structured_outputs", json::object())), json::array({"body", "structured_outputs"}));
  check_422(post(server, kChatPath, with("structured_outputs", {{"regex", "a"}, {"choice", {"a"}}})),
            json::array({"body", "structured_outputs"}));
  check_422(post(server, kChatPath, with("guided_json", "{not json")), json::array({"body", "guided_json"}));
  json two = with("guided_regex", "a+");
  two["guided_choice"] = {"a"};
  check_422(post(server, kChatPath, two), json::array({"body", "guided_choice"}));

  // The grammar's refusals: 400 with the keyword and its JSON pointer.
  check_400_naming(post(server, kChatPath, with("response_format", json_schema_format(json::parse(
                                                                   R"({"type":"object","properties":{"a":{"not":{}}}})")))),
                   "not", "/properties/a/not");
  check_400_naming(post(server, kChatPath, with("guided_json", json::parse(R"({"type":"strnig"})"))), "type", "/type");
  check_400_naming(post(server, kChatPath, with("guided_json", json::parse(R"({"$ref":"#/$defs/missing"})"))), "$ref",
                   "/$ref");
  CHECK(post(server, kChatPath, with("guided_regex", "(unclosed")).status == 400);
  server.wait_until_idle();
}

}  // namespace astrai::test
