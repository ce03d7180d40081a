// POST /v1/messages over real HTTP: every field of the whole and the streamed
// response, compared with the engine called directly.
#include <catch2/catch.hpp>

#include "tests/server/server_fixture.h"
#include "tests/server/stop_sequence_oracle.h"

namespace astrai::test {
namespace {


std::string anthropic_reason(FinishReason r) {
  if (r == FinishReason::Length || r == FinishReason::ContextLimit) return "max_tokens";
  if (r == FinishReason::StopSequence) return "stop_sequence";
  return "end_turn";
}

}  // namespace

TEST_CASE("Anthropic: a whole message, field by field", "[anthropic]") {
  TestServer server;
  const Reply reply = post(server, kMessagesPath, anthropic_body("Once upon a time", 12));
  REQUIRE(reply.status == 200);
  CHECK(reply.header("Content-Type") == "application/json");
  const json body = reply.body_json();
  const TaskOutput expected = engine_alone(server.engine(), "Once upon a time", 12);

  const std::string id = body["id"];
  CHECK(id.rfind("msg_", 0) == 0);
  CHECK(id.size() > 4);
  CHECK(body["type"] == "message");
  CHECK(body["role"] == "assistant");
  CHECK(body["model"] == "tiny-test-model");
  CHECK(body["content"] == json::array({{{"type", "text"}, {"text", expected.text}}}));
  CHECK(body["stop_reason"] == anthropic_reason(expected.reason));
  CHECK(body["stop_sequence"].is_null());
  CHECK(body["usage"] == json({{"input_tokens", server.engine().tokenize("Once upon a time").size()},
                               {"output_tokens", expected.tokens.size()},
                               {"cache_creation_input_tokens", 0},
                               {"cache_read_input_tokens", 0}}));  // contiguous cache: no prefix sharing
}

TEST_CASE("Anthropic: system as a string or as text blocks, content as a string or blocks", "[anthropic]") {
  TestServer server;  // plain template: system first, contents joined by "\n"
  const TaskOutput expected = engine_alone(server.engine(), "You tell stories.\nOnce upon a time", 10);
  json as_strings = anthropic_body("Once upon a time", 10);
  as_strings["system"] = "You tell stories.";
  json as_blocks = anthropic_body("", 10);
  as_blocks["system"] = json::array({{{"type", "text"}, {"text", "You tell stories."}}});
  as_blocks["messages"][0]["content"] = json::array({{{"type", "text"}, {"text", "Once upon a time"}}});
  for (const json& body : {as_strings, as_blocks}) {
    const json reply = post(server, kMessagesPath, body).body_json();
    CHECK(reply["content"][0]["text"] == expected.text);
    CHECK(reply["usage"]["input_tokens"] == expected.prompt_tokens);
  }
}

TEST_CASE("Anthropic: a streamed message, event by event", "[anthropic][stream]") {
  TestServer server;
  const json whole = post(server, kMessagesPath, anthropic_body("Once upon a time", 16)).body_json();
  const Reply reply = post(server, kMessagesPath, anthropic_body("Once upon a time", 16, true));
  REQUIRE(reply.status == 200);
  CHECK(reply.header("Content-Type").rfind("text/event-stream", 0) == 0);
  const auto events = parse_sse(reply.body);
  REQUIRE(events.size() >= 6);

  std::vector<std::string> names;
  std::vector<json> data;
  for (const auto& e : events) {
    names.push_back(e.event);
    data.push_back(json::parse(e.data));
    CHECK(data.back()["type"] == e.event);  // every payload names its own event
  }
  CHECK(names[0] == "message_start");
  CHECK(names[1] == "content_block_start");
  CHECK(names[names.size() - 3] == "content_block_stop");
  CHECK(names[names.size() - 2] == "message_delta");
  CHECK(names[names.size() - 1] == "message_stop");

  const json& message = data[0]["message"];
  CHECK(message["id"].get<std::string>().rfind("msg_", 0) == 0);
  CHECK(message["type"] == "message");
  CHECK(message["role"] == "assistant");
  CHECK(message["model"] == "tiny-test-model");
  CHECK(message["content"] == json::array());
  CHECK(message["stop_reason"].is_null());
  CHECK(message["stop_sequence"].is_null());
  CHECK(message["usage"]["input_tokens"] == whole["usage"]["input_tokens"]);

  CHECK(data[1] == json::parse(R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})"));
  std::string text;
  for (size_t i = 2; i + 3 < events.size(); ++i) {
    REQUIRE(names[i] == "content_block_delta");
    CHECK(data[i]["index"] == 0);
    CHECK(data[i]["delta"]["type"] == "text_delta");
    const std::string piece = data[i]["delta"]["text"];
    CHECK_FALSE(piece.empty());
    text += piece;
  }
  CHECK(text == whole["content"][0]["text"]);
  CHECK(data[names.size() - 3] == json::parse(R"({"type":"content_block_stop","index":0})"));
  const json& delta = data[names.size() - 2];
  CHECK(delta["delta"]["stop_reason"] == whole["stop_reason"]);
  CHECK(delta["delta"]["stop_sequence"].is_null());
  CHECK(delta["usage"]["output_tokens"] == whole["usage"]["output_tokens"]);
  CHECK(data.back() == json::parse(R"({"type":"message_stop"})"));
}

TEST_CASE("Anthropic: stop_sequences end the text with stop_reason stop_sequence", "[anthropic][stop]") {
  TestServer server;
  const StopCase stop = find_stop_case(server.engine(), "Once upon a time", 40);
  INFO("unstopped text: " << stop.unstopped << " | stop: " << stop.sequence);
  json body = anthropic_body("Once upon a time", 40);
  body["stop_sequences"] = json::array({stop.sequence});
  const json whole = post(server, kMessagesPath, body).body_json();
  CHECK(whole["content"][0]["text"] == stop.expected_text);
  CHECK(whole["stop_reason"] == "stop_sequence");
  CHECK(whole["stop_sequence"] == stop.sequence);

  body["stream"] = true;
  std::string text;
  json message_delta;
  for (const auto& e : parse_sse(post(server, kMessagesPath, body).body)) {
    const json d = json::parse(e.data);
    if (e.event == "content_block_delta") {
      const std::string piece = d["delta"]["text"];
      CHECK(piece.find(stop.sequence) == std::string::npos);
      text += piece;
    }
    if (e.event == "message_delta") message_delta = d;
  }
  CHECK(text == stop.expected_text);
  CHECK(message_delta["delta"]["stop_reason"] == "stop_sequence");
  CHECK(message_delta["delta"]["stop_sequence"] == stop.sequence);
}

TEST_CASE("Anthropic: a final assistant message is continued (prefill)", "[anthropic]") {
  TestServer server;  // plain template: the prompt is the contents joined by "\n"
  json body = anthropic_body("Tell me a story.", 8);
  body["messages"].push_back({{"role", "assistant"}, {"content", "Once upon"}});
  const json reply = post(server, kMessagesPath, body).body_json();
  CHECK(reply["content"][0]["text"] == engine_alone(server.engine(), "Tell me a story.\nOnce upon", 8).text);
}

}  // namespace astrai::test
