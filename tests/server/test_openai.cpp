// POST /v1/chat/completions over real HTTP: every field of the whole and the
// streamed response, compared with the engine called directly (the oracle
// for the text: the server must only carry it).
#include <catch2/catch.hpp>

#include "engine/chat_planning/request_id.h"
#include "tests/server/server_fixture.h"
#include "tests/server/stop_sequence_oracle.h"

namespace astrai::test {
namespace {


std::string openai_reason(FinishReason r) {
  return (r == FinishReason::Length || r == FinishReason::ContextLimit) ? "length" : "stop";
}

}  // namespace

TEST_CASE("OpenAI: a whole chat completion, field by field", "[openai]") {
  TestServer server;
  const Reply reply = post(server, kChatPath, openai_body("Once upon a time", 12));
  REQUIRE(reply.status == 200);
  CHECK(reply.header("Content-Type") == "application/json");
  const json body = reply.body_json();
  const TaskOutput expected = engine_alone(server.engine(), "Once upon a time", 12);

  CHECK(body["id"].get<std::string>().rfind("chatcmpl-", 0) == 0);
  CHECK(body["id"].get<std::string>().size() > 9);
  CHECK(body["object"] == "chat.completion");
  CHECK(body["created"].is_number_integer());
  CHECK(std::abs(body["created"].get<int64_t>() - unix_time_now()) < 60);
  CHECK(body["model"] == "tiny-test-model");
  REQUIRE(body["choices"].size() == 1);
  const json& choice = body["choices"][0];
  CHECK(choice["index"] == 0);
  CHECK(choice["message"] == json({{"role", "assistant"}, {"content", expected.text}}));
  CHECK(choice["finish_reason"] == openai_reason(expected.reason));
  const int prompt_tokens = int(server.engine().tokenize("Once upon a time").size());
  CHECK(body["usage"] == json({{"prompt_tokens", prompt_tokens},
                               {"completion_tokens", int(expected.tokens.size())},
                               {"total_tokens", prompt_tokens + int(expected.tokens.size())},
                               {"prompt_tokens_details", {{"cached_tokens", 0}}},  // contiguous cache: no sharing
                               {"completion_tokens_details", {{"reasoning_tokens", 0}}}}));  // no thinking template
}

TEST_CASE("OpenAI: finish_reason is length at max_tokens and the ids differ per response", "[openai]") {
  TestServer server;
  const json a = post(server, kChatPath, openai_body("The cat", 3)).body_json();
  const json b = post(server, kChatPath, openai_body("The cat", 3)).body_json();
  const TaskOutput expected = engine_alone(server.engine(), "The cat", 3);
  REQUIRE(expected.reason == FinishReason::Length);  // the precondition: no EOS within 3 tokens
  CHECK(a["choices"][0]["finish_reason"] == "length");
  CHECK(a["usage"]["completion_tokens"] == 3);
  CHECK(a["choices"][0]["message"]["content"] == b["choices"][0]["message"]["content"]);
  CHECK(a["id"] != b["id"]);
}

TEST_CASE("OpenAI: a streamed chat completion, chunk by chunk", "[openai][stream]") {
  TestServer server;
  const json whole = post(server, kChatPath, openai_body("Once upon a time", 16)).body_json();
  const Reply reply = post(server, kChatPath, openai_body("Once upon a time", 16, true));
  REQUIRE(reply.status == 200);
  CHECK(reply.header("Content-Type").rfind("text/event-stream", 0) == 0);
  const auto events = parse_sse(reply.body);
  REQUIRE(events.size() >= 4);  // role, at least one content delta, finish, [DONE]
  CHECK(events.back().data == "[DONE]");

  std::vector<json> chunks;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    CHECK(events[i].event.empty());
    chunks.push_back(json::parse(events[i].data));
  }
  const std::string id = chunks[0]["id"];
  CHECK(id.rfind("chatcmpl-", 0) == 0);
  for (size_t i = 0; i < chunks.size(); ++i) {
    const json& c = chunks[i];
    CHECK(c["id"] == id);
    CHECK(c["object"] == "chat.completion.chunk");
    CHECK(c["model"] == "tiny-test-model");
    CHECK(c["created"].is_number_integer());
    // include_usage not asked for: no chunk has a usage field, and every
    // chunk has one choice (OpenAI sends the usage chunk, with its empty
    // choices, only when asked; clients read choices[0] of every chunk).
    CHECK_FALSE(c.contains("usage"));
    CHECK(c["choices"].size() == 1);
  }
  // First: the role. Then content deltas. Then an empty delta with the reason.
  CHECK(chunks[0]["choices"] == json::parse(R"([{"index":0,"delta":{"role":"assistant"},"finish_reason":null}])"));
  std::string text;
  for (size_t i = 1; i + 1 < chunks.size(); ++i) {
    const json& choice = chunks[i]["choices"][0];
    CHECK(choice["index"] == 0);
    CHECK(choice["finish_reason"].is_null());
    REQUIRE(choice["delta"].size() == 1);
    const std::string piece = choice["delta"]["content"];
    CHECK_FALSE(piece.empty());
    text += piece;
  }
  CHECK(text == whole["choices"][0]["message"]["content"]);
  const json& finish = chunks.back()["choices"];
  CHECK(finish == json::array({{{"index", 0}, {"delta", json::object()}, {"finish_reason",
                                                                            whole["choices"][0]["finish_reason"]}}}));
}

TEST_CASE("OpenAI: stream_options.include_usage as OpenAI's clients expect it", "[openai][stream]") {
  TestServer server;
  SECTION("true: usage null in every chunk, then a final chunk with empty choices and the usage") {
    json body = openai_body("Hello", 6, true);
    body["stream_options"] = {{"include_usage", true}};
    const auto events = parse_sse(post(server, kChatPath, body).body);
    REQUIRE(events.size() >= 4);
    REQUIRE(events.back().data == "[DONE]");
    for (size_t i = 0; i + 2 < events.size(); ++i) CHECK(json::parse(events[i].data)["usage"].is_null());
    const json last = json::parse(events[events.size() - 2].data);
    CHECK(last["choices"] == json::array());
    CHECK(last["usage"]["completion_tokens"].get<int>() >= 1);
    CHECK(last["usage"]["total_tokens"] == last["usage"]["prompt_tokens"].get<int>() +
                                               last["usage"]["completion_tokens"].get<int>());
  }
  SECTION("true: the usage chunk's counts are the whole response's") {
    const json whole = post(server, kChatPath, openai_body("Once upon a time", 16)).body_json();
    json body = openai_body("Once upon a time", 16, true);
    body["stream_options"] = {{"include_usage", true}};
    const auto events = parse_sse(post(server, kChatPath, body).body);
    REQUIRE(events.size() >= 2);
    CHECK(json::parse(events[events.size() - 2].data)["usage"] == whole["usage"]);
  }
  SECTION("false: no usage chunk") {
    json body = openai_body("Hello", 6, true);
    body["stream_options"] = {{"include_usage", false}};
    const auto events = parse_sse(post(server, kChatPath, body).body);
    REQUIRE(events.back().data == "[DONE]");
    for (size_t i = 0; i + 1 < events.size(); ++i) {
      const json c = json::parse(events[i].data);
      CHECK_FALSE(c.contains("usage"));
      CHECK(c["choices"].size() == 1);
    }
  }
}

TEST_CASE("OpenAI: a stop sequence ends the text, is not returned, and never streams", "[openai][stop]") {
  TestServer server;
  const StopCase stop = find_stop_case(server.engine(), "Once upon a time", 40);
  INFO("unstopped text: " << stop.unstopped << " | stop: " << stop.sequence);

  json whole_body = openai_body("Once upon a time", 40);
  whole_body["stop"] = stop.sequence;  // a single string
  const json whole = post(server, kChatPath, whole_body).body_json();
  CHECK(whole["choices"][0]["message"]["content"] == stop.expected_text);
  CHECK(whole["choices"][0]["finish_reason"] == "stop");

  json stream_body = openai_body("Once upon a time", 40, true);
  stream_body["stop"] = json::array({"zzzz-never", stop.sequence});  // a list
  const auto events = parse_sse(post(server, kChatPath, stream_body).body);
  std::string text;
  std::string finish_reason;
  for (const auto& e : events) {
    if (e.data == "[DONE]") continue;
    const json c = json::parse(e.data);
    if (c["choices"].empty()) continue;
    const json& choice = c["choices"][0];
    if (choice["delta"].contains("content")) {
      const std::string piece = choice["delta"]["content"];
      CHECK(piece.find(stop.sequence) == std::string::npos);
      text += piece;
    }
    if (!choice["finish_reason"].is_null()) finish_reason = choice["finish_reason"];
  }
  CHECK(text == stop.expected_text);
  CHECK(finish_reason == "stop");
}

TEST_CASE("OpenAI: system and developer messages, content as text parts", "[openai]") {
  TestServer server;  // plain template: contents joined by "\n"
  const json parts = {{"model", "m"},
                      {"max_tokens", 8},
                      {"temperature", 0},
                      {"messages", json::array({{{"role", "developer"}, {"content", "Be brief."}},
                                                {{"role", "user"},
                                                 {"content", json::array({{{"type", "text"}, {"text", "Tell"}},
                                                                          {{"type", "text"}, {"text", "a story"}}})}}})}};
  const json reply = post(server, kChatPath, parts).body_json();
  const TaskOutput expected = engine_alone(server.engine(), "Be brief.\nTell\na story", 8);
  CHECK(reply["choices"][0]["message"]["content"] == expected.text);
  CHECK(reply["usage"]["prompt_tokens"] == server.engine().tokenize("Be brief.\nTell\na story").size());
}

TEST_CASE("OpenAI: a seeded sampled request is reproducible", "[openai]") {
  TestServer server;
  json body = openai_body("Once", 10);
  body["temperature"] = 0.9;
  body["top_p"] = 0.95;
  body["top_k"] = 20;
  body["seed"] = 1234;
  const json a = post(server, kChatPath, body).body_json();
  const json b = post(server, kChatPath, body).body_json();
  CHECK(a["choices"][0]["message"]["content"] == b["choices"][0]["message"]["content"]);
}

TEST_CASE("ignore_eos (extension) generates max_tokens past the model's end", "[openai]") {
  TestServer server;
  // A prompt whose greedy answer ends by itself (EOS) before 100 tokens.
  json ended;
  for (const char* candidate : {"Once upon a time", "The cat", "One day", "In the forest", "Tom and Sue", "Hello",
                                "A", "B", "C", "D", "E", "F", "G", "H"}) {
    ended = post(server, kChatPath, openai_body(candidate, 100)).body_json();
    if (ended["choices"][0]["finish_reason"] == "stop") {
      json body = openai_body(candidate, 100);
      body["ignore_eos"] = true;
      const json forced = post(server, kChatPath, body).body_json();
      CHECK(forced["choices"][0]["finish_reason"] == "length");
      CHECK(forced["usage"]["completion_tokens"] == 100);
      return;
    }
  }
  FAIL("no candidate prompt ends before 100 tokens; last answer: " << ended.dump());
}

TEST_CASE("OpenAI: max_tokens omitted means what the context leaves (as OpenAI and vLLM)", "[openai]") {
  // A context of 512, over the 256 tokens an old fixed default gave: with
  // ignore_eos the request runs until the context is full. The engine's rule
  // (engine/scheduler/prompt_limit.h): a prompt of P tokens leaves room for
  // context - P tokens fed back, plus one last token that is not, so
  // exactly context - P + 1 tokens, finish "length".
  TestServerOptions options;
  options.context = 512;
  TestServer server(options);
  json body = openai_body("Once upon a time", 1);
  body.erase("max_tokens");
  body["ignore_eos"] = true;
  const json reply = post(server, kChatPath, body).body_json();
  const int prompt_tokens = reply["usage"]["prompt_tokens"];
  CHECK(reply["usage"]["completion_tokens"] == 512 - prompt_tokens + 1);
  CHECK(reply["choices"][0]["finish_reason"] == "length");
  // Streamed, the same count.
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  const auto events = parse_sse(post(server, kChatPath, body).body);
  REQUIRE(events.size() >= 2);
  CHECK(json::parse(events[events.size() - 2].data)["usage"]["completion_tokens"] == 512 - prompt_tokens + 1);
}

}  // namespace astrai::test
