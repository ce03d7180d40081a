// POST /v1/responses over real HTTP (OpenAI's Responses API): the whole
// response field by field against the engine called directly, the event
// stream against the whole response, input items read into the chat turns
// a template gets, and malformed fields as OpenAI's 400 naming them.
#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <sstream>

#include "engine/chat_planning/request_id.h"
#include "server/protocols/responses_builder.h"
#include "tests/server/server_fixture.h"
#include "tests/support/shared_data.h"

namespace astrai::test {
namespace {

constexpr const char* kResponsesPath = "/v1/responses";

json responses_body(const std::string& input, int max_output_tokens, bool stream = false) {
  return {{"model", "tiny-test-model"},
          {"input", input},
          {"max_output_tokens", max_output_tokens},
          {"temperature", 0},
          {"stream", stream}};
}

bool cut_short(const TaskOutput& t) { return t.reason == FinishReason::Length || t.reason == FinishReason::ContextLimit; }

// The turns a request body becomes (what the chat template reads).
std::vector<ChatMessage> turns_of(const json& body) {
  ResponsesBuilder builder("m", SamplingParams{});
  return builder.prepare(body).messages;
}

}  // namespace

TEST_CASE("Responses: a whole response, field by field", "[responses]") {
  TestServer server;
  const Reply reply = post(server, kResponsesPath, responses_body("Once upon a time", 12));
  REQUIRE(reply.status == 200);
  CHECK(reply.header("Content-Type") == "application/json");
  const json body = reply.body_json();
  const TaskOutput expected = engine_alone(server.engine(), "Once upon a time", 12);

  CHECK(body["id"].get<std::string>().rfind("resp_", 0) == 0);
  CHECK(body["object"] == "response");
  CHECK(std::abs(body["created_at"].get<int64_t>() - unix_time_now()) < 60);
  CHECK(body["model"] == "tiny-test-model");
  const std::string status = cut_short(expected) ? "incomplete" : "completed";
  CHECK(body["status"] == status);
  CHECK(body["incomplete_details"] ==
        (cut_short(expected) ? json{{"reason", "max_output_tokens"}} : json(nullptr)));
  CHECK(body["error"].is_null());
  REQUIRE(body["output"].size() == 1);
  const json& item = body["output"][0];
  CHECK(item["type"] == "message");
  CHECK(item["id"].get<std::string>().rfind("msg_", 0) == 0);
  CHECK(item["role"] == "assistant");
  CHECK(item["status"] == status);
  CHECK(item["content"] ==
        json::array({{{"type", "output_text"}, {"text", expected.text}, {"annotations", json::array()}}}));
  CHECK(body["output_text"] == expected.text);
  CHECK(body["max_output_tokens"] == 12);
  CHECK(body["store"] == true);  // kept for previous_response_id (test_response_store.cpp)
  const int input_tokens = int(server.engine().tokenize("Once upon a time").size());
  const int output_tokens = int(expected.tokens.size());
  CHECK(body["usage"] == json({{"input_tokens", input_tokens},
                               {"input_tokens_details", {{"cached_tokens", 0}}},
                               {"output_tokens", output_tokens},
                               {"output_tokens_details", {{"reasoning_tokens", 0}}},
                               {"total_tokens", input_tokens + output_tokens}}));
}

TEST_CASE("Responses: the event stream, event by event, equal to the whole response", "[responses][stream]") {
  TestServer server;
  for (const int max_tokens : {3, 16}) {
    INFO("max_output_tokens " << max_tokens);
    const json whole = post(server, kResponsesPath, responses_body("Once upon a time", max_tokens)).body_json();
    const Reply reply = post(server, kResponsesPath, responses_body("Once upon a time", max_tokens, true));
    REQUIRE(reply.status == 200);
    CHECK(reply.header("Content-Type").rfind("text/event-stream", 0) == 0);
    std::vector<json> events;
    for (const SseEvent& e : parse_sse(reply.body)) {
      const json data = json::parse(e.data);
      CHECK(data["type"] == e.event);  // the event's name is its type
      CHECK(data["sequence_number"] == int(events.size()));  // 0, 1, 2, ... with no gap
      events.push_back(data);
    }
    REQUIRE(events.size() >= 8);
    CHECK(events[0]["type"] == "response.created");
    CHECK(events[1]["type"] == "response.in_progress");
    CHECK(events[0]["response"]["status"] == "in_progress");
    const std::string id = events[0]["response"]["id"];
    CHECK(id.rfind("resp_", 0) == 0);
    CHECK(events[2]["type"] == "response.output_item.added");
    CHECK(events[3]["type"] == "response.content_part.added");
    const json item_id = events[2]["item"]["id"];
    std::string text;
    size_t i = 4;
    for (; i < events.size() && events[i]["type"] == "response.output_text.delta"; ++i) {
      CHECK(events[i]["item_id"] == item_id);
      CHECK(events[i]["output_index"] == 0);
      text += events[i]["delta"].get<std::string>();
    }
    CHECK(text == whole["output_text"]);
    REQUIRE(i + 4 == events.size());
    CHECK(events[i]["type"] == "response.output_text.done");
    CHECK(events[i]["text"] == text);
    CHECK(events[i + 1]["type"] == "response.content_part.done");
    CHECK(events[i + 2]["type"] == "response.output_item.done");
    CHECK(events[i + 2]["item"]["id"] == item_id);
    const std::string status = whole["status"];
    CHECK(events[i + 3]["type"] == (status == "completed" ? "response.completed" : "response.incomplete"));
    // The last event's response is the whole one but for the ids and the time.
    json last = events[i + 3]["response"], expected = whole;
    CHECK(last["id"] == id);
    CHECK(last["output"][0]["id"] == item_id);
    CHECK(events[i + 2]["item"] == last["output"][0]);
    for (json* r : {&last, &expected}) {
      r->erase("id");
      r->erase("created_at");
      (*r)["output"][0].erase("id");
    }
    CHECK(last == expected);
  }
}

TEST_CASE("Responses: input items become the chat turns a template reads", "[responses]") {
  // instructions first; a message's parts joined; an assistant message and
  // the function calls right after it one turn, with the reasoning item
  // before them as its reasoning; each output a tool turn naming its call.
  const json body = json::parse(R"({
    "instructions": "Be brief.",
    "input": [
      {"role": "developer", "content": "Use tools."},
      {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather"},
                                                        {"type": "input_text", "text": "in Paris?"}]},
      {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "short"}],
       "content": [{"type": "reasoning_text", "text": "I should call get_weather."}]},
      {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]},
      {"type": "function_call", "call_id": "call_a", "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"},
      {"type": "function_call", "call_id": "call_b", "name": "get_time", "arguments": "{}"},
      {"type": "function_call_output", "call_id": "call_a", "output": "18 C"},
      {"type": "function_call_output", "call_id": "call_b", "output": [{"type": "input_text", "text": "noon"}]},
      {"type": "function_call", "call_id": "call_c", "name": "get_weather", "arguments": "{\"city\": \"Rome\"}"}
    ]})");
  const std::vector<ChatMessage> turns = turns_of(body);
  REQUIRE(turns.size() == 7);
  CHECK((turns[0].role == ChatRole::System && turns[0].content == "Be brief."));
  CHECK((turns[1].role == ChatRole::System && turns[1].content == "Use tools."));
  CHECK((turns[2].role == ChatRole::User && turns[2].content == "Weather\nin Paris?"));
  CHECK(turns[3].role == ChatRole::Assistant);
  CHECK(turns[3].content == "Checking.");
  CHECK(turns[3].reasoning == "I should call get_weather.");  // the full text, not the summary
  CHECK(turns[3].tool_calls == json::parse(R"([
    {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
    {"id": "call_b", "type": "function", "function": {"name": "get_time", "arguments": {}}}])"));
  CHECK((turns[4].role == ChatRole::Tool && turns[4].content == "18 C" && turns[4].tool_call_id == "call_a" &&
         turns[4].name == "get_weather"));
  CHECK((turns[5].role == ChatRole::Tool && turns[5].content == "noon" && turns[5].name == "get_time"));
  CHECK((turns[6].role == ChatRole::Assistant && turns[6].content.empty()));
  CHECK(turns[6].tool_calls.size() == 1);
  // Reasoning with no assistant output after it (a user turn next) is dropped, not moved to a later turn.
  const auto stray = turns_of(json::parse(R"({"input": [
    {"type": "reasoning", "content": [{"type": "reasoning_text", "text": "old thoughts"}]},
    {"role": "user", "content": "Next?"},
    {"role": "assistant", "content": "Yes."}]})"));
  REQUIRE(stray.size() == 2);
  CHECK(stray[1].reasoning.empty());
  // A string input is one user turn.
  const auto one = turns_of({{"input", "Hi"}});
  REQUIRE(one.size() == 1);
  CHECK((one[0].role == ChatRole::User && one[0].content == "Hi"));
}

TEST_CASE("Responses: a request the Codex CLI sent is read (tests/server/fixtures)", "[responses]") {
  // codex exec 0.171.0 with a model provider whose wire_api is "responses"
  // (docs/server.md): no instructions, two developer and two user messages,
  // seven function tools, a namespace of five more, a web_search tool, and
  // the fields a stateless server accepts (store false, include, reasoning,
  // prompt_cache_key, client_metadata). Its paths and ids were replaced.
  std::ifstream in(source_root() / "tests/server/fixtures/codex_0.171.0_request.json");
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  const json body = json::parse(text.str());
  ResponsesBuilder builder("m", SamplingParams{});
  ChatRequest request;
  REQUIRE_NOTHROW(request = builder.prepare(body));
  REQUIRE(request.messages.size() == 4);
  CHECK(request.messages[0].role == ChatRole::System);  // developer
  CHECK(request.messages[1].role == ChatRole::System);
  CHECK(request.messages[2].role == ChatRole::User);
  CHECK(request.messages[3].content == "Say hi");
  // The function tools, the namespace's among them; web_search left out.
  REQUIRE(request.tools.is_array());
  CHECK(request.tools.size() == 12);
  std::set<std::string> names;
  for (const json& t : request.tools) names.insert(t["function"]["name"].get<std::string>());
  CHECK(names.count("exec_command") == 1);
  CHECK(names.count("close_agent") == 1);  // from the multi_agent_v1 namespace
  CHECK(request.tool_choice.mode == ToolChoice::Mode::Auto);
  CHECK(request.stream);
}

TEST_CASE("Responses: malformed fields are OpenAI's 400 naming the parameter", "[responses]") {
  TestServer server;
  const auto error_of = [&](const json& body) {
    const Reply reply = post(server, kResponsesPath, body);
    CHECK(reply.status == 400);
    const json e = reply.body_json()["error"];
    CHECK(e["type"] == "invalid_request_error");
    return e;
  };
  json body = responses_body("Hi", 4);
  body["input"] = json::array({{{"role", "wizard"}, {"content", "hi"}}});
  CHECK(error_of(body)["param"] == "input[0].role");
  body = responses_body("Hi", 0);
  CHECK(error_of(body)["param"] == "max_output_tokens");
  body = responses_body("Hi", 4);
  body.erase("input");
  CHECK(error_of(body)["param"] == "input");
  body = responses_body("Hi", 4);
  body["previous_response_id"] = "resp_123";
  CHECK(error_of(body)["param"] == "previous_response_id");
  body = responses_body("Hi", 4);
  body["input"] = json::array({{{"type", "web_search_call"}, {"id", "ws_1"}}});
  CHECK(error_of(body)["param"] == "input[0].type");
  body = responses_body("Hi", 4);
  body["input"] = json::array({{{"type", "function_call"}, {"call_id", "c"}, {"name", "f"}, {"arguments", 7}}});
  CHECK(error_of(body)["param"] == "input[0].arguments");
  body = responses_body("Hi", 4);
  body["input"] = json::array({{{"role", "user"}, {"content", json::array({{{"type", "input_image"}}})}}});
  CHECK(error_of(body)["param"] == "input[0].content[0].type");
  const Reply not_json = post(server, kResponsesPath, std::string("{\"input\": "));
  CHECK(not_json.status == 400);
  CHECK(not_json.body_json()["error"]["type"] == "invalid_request_error");
  // The server still answers a good request after all of them.
  CHECK(post(server, kResponsesPath, responses_body("Hi", 2)).status == 200);
}

}  // namespace astrai::test
