// parse_chat_request on its own, without HTTP: what any body becomes for
// each protocol. (The same through a real server: test_errors.cpp; on any
// bytes: tests/fuzz/fuzz_request.cpp.)
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "server/protocols/chat_request_parser.h"
#include "reference/sampling/sampling_params.h"
#include "server/protocols/protocols.h"

namespace astrai::test {
namespace {

using json = nlohmann::ordered_json;

ParsedChatRequest parse_as(const Protocol& protocol, const std::string& body) {
  const auto builder = protocol.make_builder("test-model", SamplingParams{});
  return parse_chat_request(*builder, body);
}

// The detail entry of a body that is not JSON, checked for shape.
json only_json_invalid(const ParsedChatRequest& parsed) {
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.status == 422);
  const json& detail = parsed.error_body.at("detail");
  REQUIRE(detail.size() == 1);
  CHECK(detail[0].at("type") == "json_invalid");
  CHECK(detail[0].at("msg") == "JSON decode error");
  REQUIRE(detail[0].at("loc").size() == 2);
  CHECK(detail[0]["loc"][0] == "body");
  return detail[0];
}

}  // namespace

TEST_CASE("parse_chat_request: a valid body becomes the request", "[parser]") {
  for (const Protocol& protocol : protocols()) {
    if (protocol.name == "completions") continue;  // no messages: test_completions.cpp
    if (protocol.name == "responses") continue;    // input items and OpenAI's 400s: test_responses.cpp
    INFO(protocol.name);
    const std::string stop_key = protocol.name == "anthropic" ? "stop_sequences" : "stop";
    const ParsedChatRequest parsed =
        parse_as(protocol, R"({"max_tokens":5,"messages":[{"role":"user","content":"Hi"}],")" + stop_key + R"(":["x"]})");
    REQUIRE(parsed.ok());
    CHECK(parsed.request->messages.size() == 1);
    CHECK(parsed.request->messages[0].content == "Hi");
    CHECK(parsed.request->max_tokens == 5);
    CHECK(parsed.request->stop == std::vector<std::string>{"x"});
  }
}

TEST_CASE("parse_chat_request: not JSON, not an object, not valid", "[parser]") {
  for (const Protocol& protocol : protocols()) {
    if (protocol.name == "completions") continue;  // no messages: test_completions.cpp
    if (protocol.name == "responses") continue;    // input items and OpenAI's 400s: test_responses.cpp
    INFO(protocol.name);
    // The offending byte: the x at offset 13.
    CHECK(only_json_invalid(parse_as(protocol, R"({"messages": x})"))["loc"][1] == 13);
    const ParsedChatRequest list = parse_as(protocol, "[1, 2]");
    REQUIRE_FALSE(list.ok());
    CHECK(list.status == 422);
    CHECK(list.error_body == json::parse(R"({"detail":[{"loc":["body"],"msg":"Input should be a valid dictionary",)"
                                         R"("type":"dict_type"}]})"));
    const ParsedChatRequest invalid = parse_as(protocol, R"({"max_tokens":5,"messages":[]})");
    REQUIRE_FALSE(invalid.ok());
    CHECK(invalid.status == 422);
    CHECK(invalid.error_body["detail"][0]["type"] == "too_short");
  }
}

// Found by fuzz_request: nlohmann reports a number beyond a double's range
// as json::out_of_range, not json::parse_error, and it escaped the parser
// (the server answered 500). It is JSON that cannot be read: a 422
// json_invalid at the number, in any field, for both protocols.
TEST_CASE("parse_chat_request: a number beyond a double's range is a 422 json_invalid", "[parser][fuzz]") {
  for (const std::string number : {"1e400", "-1e999", "9999999999999999000000000e00000000000000000000179091268"}) {
    for (const std::string field : {"temperature", "unknown_field"}) {
      const std::string body = R"({"messages":[{"role":"user","content":"Hi"}],")" + field + R"(":)" + number + "}";
      const size_t start = body.find(number);
      for (const Protocol& protocol : protocols()) {
        if (protocol.name == "completions") continue;  // no messages: test_completions.cpp
        if (protocol.name == "responses") continue;    // input items and OpenAI's 400s: test_responses.cpp
    if (protocol.name == "responses") continue;    // input items and OpenAI's 400s: test_responses.cpp
        INFO(protocol.name << " " << body);
        ParsedChatRequest parsed;
        REQUIRE_NOTHROW(parsed = parse_as(protocol, body));
        const json error = only_json_invalid(parsed);
        const size_t byte = error["loc"][1].get<size_t>();
        CHECK(byte >= start);
        CHECK(byte <= start + number.size());
        CHECK(error["ctx"]["error"].get<std::string>().find("number overflow") != std::string::npos);
      }
    }
  }
}

// Found with fuzz_request's bounds property: JSON numbers are doubles, the
// engine's temperature and top_p are floats. top_p 1e-50 is in (0, 1] but
// was narrowed to 0, and temperature 1e39 to inf, so a request the validator
// had accepted was refused by the engine (a 400 naming no field).
TEST_CASE("parse_chat_request: temperature and top_p stay within their bounds as floats", "[parser][fuzz]") {
  const std::string messages = R"("messages":[{"role":"user","content":"Hi"}])";
  for (const Protocol& protocol : protocols()) {
    if (protocol.name == "completions") continue;  // no messages: test_completions.cpp
    if (protocol.name == "responses") continue;    // input items and OpenAI's 400s: test_responses.cpp
    for (const std::string sampling :
         {R"("top_p":1e-50)", R"("top_p":1e-40)", R"("temperature":1e39)", R"("temperature":1e300,"top_p":1e-300)",
          R"("temperature":1e-50)"}) {
      const std::string body = "{" + messages + R"(,"max_tokens":4,)" + sampling + "}";
      INFO(protocol.name << " " << body);
      const ParsedChatRequest parsed = parse_as(protocol, body);
      REQUIRE(parsed.ok());
      const SamplingParams& p = parsed.request->sampling;
      CHECK(p.top_p > 0.0f);
      CHECK(p.top_p <= 1.0f);
      CHECK(std::isfinite(p.temperature));
      CHECK(p.temperature >= 0.0f);
      CHECK_NOTHROW(p.validate());
    }
  }
}

}  // namespace astrai::test

namespace astrai::test {

// nlohmann reads an integer beyond 64 bits (2^64 and up, or below -2^63) as
// a double; it was reported as "a number with a fractional part". It is an
// integer out of range, and the message must say so.
TEST_CASE("parse_chat_request: an integer beyond 64 bits is out of range, not fractional", "[parser]") {
  for (const std::string number : {"18446744073709551616", "99999999999999999999999", "-10000000000000000000",
                                   "1e30"}) {
    for (const std::string field : {"max_tokens", "seed", "top_k"}) {
      const std::string body =
          R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":4,")" + field + R"(":)" + number + "}";
      for (const Protocol& protocol : protocols()) {
        if (protocol.name == "completions") continue;  // no messages: test_completions.cpp
        if (protocol.name == "responses") continue;    // input items and OpenAI's 400s: test_responses.cpp
    if (protocol.name == "responses") continue;    // input items and OpenAI's 400s: test_responses.cpp
        INFO(protocol.name << " " << body);
        const ParsedChatRequest parsed = parse_as(protocol, body);
        REQUIRE_FALSE(parsed.ok());
        CHECK(parsed.status == 422);
        const json& detail = parsed.error_body.at("detail");
        REQUIRE(detail.size() == 1);
        CHECK(detail[0]["loc"] == json::array({"body", field}));
        CHECK(detail[0]["type"] == "int_parsing_size");
        CHECK(detail[0]["msg"].get<std::string>().find("out of range") != std::string::npos);
      }
    }
  }
  // The largest 64-bit values still read: 2^64 - 1 (unsigned) and -2^63,
  // and an integral double below 2^64 (1e19); counts are clamped as before.
  for (const std::string number : {"18446744073709551615", "-9223372036854775808", "1e19"}) {
    const std::string body = R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":4,"seed":)" + number + "}";
    INFO(body);
    CHECK(parse_as(protocols()[0], body).ok());
  }
}

// Anthropic's Messages API requires max_tokens; OpenAI's leaves it optional
// (what the context leaves, decided once the prompt's length is known).
TEST_CASE("parse_chat_request: max_tokens is required by Anthropic, optional for OpenAI", "[parser]") {
  const std::string body = R"({"messages":[{"role":"user","content":"Hi"}]})";
  for (const Protocol& protocol : protocols()) {
    if (protocol.name == "completions") continue;  // no messages: test_completions.cpp
    if (protocol.name == "responses") continue;    // input items and OpenAI's 400s: test_responses.cpp
    INFO(protocol.name);
    const ParsedChatRequest parsed = parse_as(protocol, body);
    if (protocol.name == std::string("anthropic")) {
      REQUIRE_FALSE(parsed.ok());
      const json& detail = parsed.error_body.at("detail");
      REQUIRE(detail.size() == 1);
      CHECK(detail[0]["loc"] == json::array({"body", "max_tokens"}));
      CHECK(detail[0]["type"] == "missing");
    } else {
      REQUIRE(parsed.ok());
      CHECK_FALSE(parsed.request->max_tokens.has_value());
    }
  }
}

}  // namespace astrai::test
