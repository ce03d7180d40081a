// Tool calls and reasoning over real HTTP, both protocols, whole and
// streamed. The model is the tiny synthetic one with a scripted output
// (GatedExecutor::script: the scripted token's logit raised far above the
// rest, so greedy decoding writes exactly the script) behind a small
// Qwen-shaped Jinja template (ChatML, <tool_call> instructions, <think>), so
// the server detects the hermes family and the reasoning split. Expected
// parts are written out by hand; a stream, joined, must equal the whole
// response; the prompts the server renders must equal the template rendered
// directly (HfChatTemplate) on the conversation in transformers' shape.
// gpt-oss's harmony messages get the same checks behind a small template of
// their shape (kHarmonyTemplate). tool_choice required / named (and
// Anthropic's any / tool) are enforced by the grammar: there the model is random (temperature 1, unscripted) and
// its calls are checked against the tools' rules by hand.
#include <functional>
#include <map>
#include <set>

#include <catch2/catch.hpp>

#include "engine/chat/hf_chat_template.h"
#include "tests/server/raw_connection.h"
#include "tests/server/server_fixture.h"

namespace astrai::test {
namespace {

// A Qwen 2.5 / 3 shaped template, small: tools as JSON lines in a system
// turn, past calls as <tool_call> blocks, tool results as user turns, and
// Qwen 3's empty think block when enable_thinking is false.
constexpr const char* kTemplate = R"({%- if tools %}<|im_start|>system
# Tools
{%- for tool in tools %}
{{ tool | tojson }}
{%- endfor %}
Call a tool as <tool_call>{"name": ..., "arguments": ...}</tool_call><|im_end|>
{% endif %}
{%- for m in messages %}
{%- if m.role == 'tool' %}<|im_start|>user
<tool_response>{{ m.tool_call_id }}: {{ m.content }}</tool_response><|im_end|>
{% else %}<|im_start|>{{ m.role }}
{% if m.content %}{{ m.content }}{% endif %}
{%- if m.tool_calls %}{% for c in m.tool_calls %}<tool_call>{{ c.function | tojson }}</tool_call>{% endfor %}{% endif %}<|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% if enable_thinking is defined and enable_thinking is false %}<think>

</think>

{% endif %}{% endif %})";

const json kWeatherTool = {{"type", "function"},
                           {"function",
                            {{"name", "get_weather"},
                             {"description", "The weather in a city"},
                             {"parameters",
                              {{"type", "object"},
                               {"properties", {{"city", {{"type", "string"}}}}},
                               {"required", json::array({"city"})}}}}}};
const json kTimeTool = {{"type", "function"}, {"function", {{"name", "get_time"}, {"parameters", {{"type", "object"}}}}}};

constexpr const char* kOutput =
    "<think>\nThe user wants the weather.\n</think>\n\n"
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
    "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}\n</tool_call>";

TestServerOptions jinja_options() {
  TestServerOptions options;
  options.context = 1024;
  options.jinja_template = kTemplate;
  return options;
}

json openai_tools_body(bool stream) {
  json body = openai_body("What is the weather in Paris?", 400, stream);
  body["tools"] = json::array({kWeatherTool, kTimeTool});
  return body;
}

json anthropic_tools_body(bool stream) {
  json body = anthropic_body("What is the weather in Paris?", 400, stream);
  body["tools"] = json::array({{{"name", "get_weather"},
                                {"description", "The weather in a city"},
                                {"input_schema", kWeatherTool["function"]["parameters"]}},
                               {{"name", "get_time"}, {"input_schema", {{"type", "object"}}}}});
  return body;
}

// Scripts kOutput after the prompt of `body` (its length asked of the server).
void script_output(TestServer& server, const std::string& path, const json& body, const std::string& output) {
  server.executor().script({}, 0, -1);
  json probe = body;
  probe[path == "/v1/responses" ? "max_output_tokens" : "max_tokens"] = 1;
  probe["stream"] = false;
  const Reply reply = post(server, path, probe);
  REQUIRE(reply.status == 200);
  const json usage = reply.body_json()["usage"];
  const int prompt = usage.contains("prompt_tokens") ? usage["prompt_tokens"].get<int>()
                                                     : usage["input_tokens"].get<int>() + usage.value("cache_read_input_tokens", 0);
  // One byte token per byte: their text is exactly the bytes (encode() would
  // put SentencePiece's dummy space first).
  std::vector<int> tokens;
  for (unsigned char b : output) tokens.push_back(server.engine().tokenizer().byte_token(b));
  server.executor().script(tokens, prompt, server.engine().tokenizer().eos_id());
}

// Scripts `prefix` (one byte token per byte) after the prompt of `body`,
// asked of the server without its constraint; after the prefix the script
// ends and the random model writes the rest under the request's grammar.
void script_prefix(TestServer& server, const std::string& path, const json& body, const std::string& prefix) {
  json probe = body;
  probe.erase("tool_choice");
  probe.erase("response_format");
  server.executor().script({}, 0, -1);
  probe["max_tokens"] = 1;
  const Reply reply = post(server, path, probe);
  REQUIRE(reply.status == 200);
  std::vector<int> tokens;
  for (unsigned char b : prefix) tokens.push_back(server.engine().tokenizer().byte_token(b));
  server.executor().script(tokens, reply.body_json()["usage"]["prompt_tokens"].get<int>(), -1);
}

// An OpenAI stream joined: reasoning, content, calls by index.
struct JoinedOpenAI {
  std::string reasoning, content;
  json calls = json::array();
  json finish_reason = nullptr;
};

JoinedOpenAI join_openai(const std::string& stream) {
  JoinedOpenAI j;
  for (const SseEvent& e : parse_sse(stream)) {
    if (e.data == "[DONE]") continue;
    const json chunk = json::parse(e.data);
    for (const json& c : chunk["choices"]) {
      const json& d = c["delta"];
      if (d.contains("reasoning_content")) {
        CHECK(d["reasoning"] == d["reasoning_content"]);
        j.reasoning += d["reasoning_content"].get<std::string>();
      }
      if (d.contains("content") && d["content"].is_string()) j.content += d["content"].get<std::string>();
      if (d.contains("tool_calls"))
        for (const json& t : d["tool_calls"]) {
          const size_t index = t["index"];
          if (t.contains("id")) {  // a call's first delta: id, type and name, as OpenAI streams it
            REQUIRE(index == j.calls.size());
            CHECK(t["type"] == "function");
            j.calls.push_back({{"id", t["id"]}, {"type", "function"}, {"function", {{"name", t["function"]["name"]}, {"arguments", ""}}}});
          }
          REQUIRE(index < j.calls.size());
          j.calls[index]["function"]["arguments"] =
              j.calls[index]["function"]["arguments"].get<std::string>() + t["function"]["arguments"].get<std::string>();
        }
      if (!c["finish_reason"].is_null()) j.finish_reason = c["finish_reason"];
    }
  }
  return j;
}

// The calls without their ids (random per response).
json without_ids(json calls) {
  for (json& c : calls) c.erase("id");
  return calls;
}

const json kExpectedCalls = json::array(
    {{{"type", "function"}, {"function", {{"name", "get_weather"}, {"arguments", R"({"city":"Paris"})"}}}},
     {{"type", "function"}, {"function", {{"name", "get_time"}, {"arguments", R"({"tz":"CET"})"}}}}});

// Streamed blocks against the whole response's, tool_use ids aside (random per response).
void check_same_blocks(const json& streamed, const json& whole) {
  REQUIRE(streamed.size() == whole.size());
  for (size_t i = 0; i < streamed.size(); ++i) {
    json a = streamed[i], b = whole[i];
    a.erase("id");
    b.erase("id");
    CHECK(a == b);
  }
}

// An Anthropic stream's content blocks rebuilt from its events (each
// block's deltas joined; tool_use inputs parsed), checking the events'
// order: blocks open one at a time, each stopped before the next starts.
json anthropic_stream_blocks(const std::string& stream, json& stop_reason) {
  INFO(stream);
  json blocks = json::array();
  int open = -1;
  for (const SseEvent& e : parse_sse(stream)) {
    const json data = json::parse(e.data);
    if (e.event == "content_block_start") {
      REQUIRE(data["index"] == blocks.size());
      REQUIRE(open == -1);  // the one before was stopped
      open = data["index"];
      json block = data["content_block"];
      if (block["type"] == "tool_use") block["input"] = "";  // filled by input_json_delta
      blocks.push_back(block);
    } else if (e.event == "content_block_delta") {
      REQUIRE(data["index"] == open);
      json& block = blocks[size_t(open)];
      const json& d = data["delta"];
      if (d["type"] == "thinking_delta") block["thinking"] = block["thinking"].get<std::string>() + d["thinking"].get<std::string>();
      else if (d["type"] == "text_delta") block["text"] = block["text"].get<std::string>() + d["text"].get<std::string>();
      else if (d["type"] == "input_json_delta") block["input"] = block["input"].get<std::string>() + d["partial_json"].get<std::string>();
      else FAIL("unknown delta " << d.dump());
    } else if (e.event == "content_block_stop") {
      REQUIRE(data["index"] == open);
      open = -1;
    } else if (e.event == "message_delta") {
      stop_reason = data["delta"]["stop_reason"];
    }
  }
  CHECK(open == -1);
  for (json& block : blocks)
    if (block["type"] == "tool_use") block["input"] = json::parse(block["input"].get<std::string>());
  return blocks;
}

// A streamed call's arguments arrive as the model writes them: the loop is
// held (the step gate, not a clock) once the scripted `output` has been
// written up to its first "Par" (inside the first call's arguments), and the
// client must have received arguments already, a proper prefix of
// `arguments` (the first call's whole), before the rest of the call exists.
// `arguments_of` reads one event's piece of arguments ("" for other events).
// How many pieces a whole stream has depends on how far its reader lags
// (PieceQueue batches what waits): that is not checked.
void check_arguments_stream_early(TestServer& server, const std::string& path, const json& body, const std::string& output,
                                  const std::string& arguments, const std::function<std::string(const json&)>& arguments_of) {
  server.executor().pause();
  const uint64_t before = server.engine().get_stats().total_tokens;
  const std::string request = body.dump();
  RawConnection client(server.port());
  client.send("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
              std::to_string(request.size()) + "\r\n\r\n" + request);
  const uint64_t written = output.find("Par") + 3;
  while (server.engine().get_stats().total_tokens - before < written) server.executor().step_once();
  std::string received, joined;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);  // a hang detector
  while (joined.empty() && std::chrono::steady_clock::now() < deadline) {
    received += client.receive(std::chrono::milliseconds(100));
    joined.clear();
    for (size_t at = received.find("data: "); at != std::string::npos; at = received.find("data: ", at + 1)) {
      const size_t end = received.find('\n', at);
      if (end == std::string::npos) break;
      const json event = json::parse(received.substr(at + 6, end - at - 6), nullptr, false);
      if (event.is_object()) joined += arguments_of(event);
    }
  }
  server.executor().resume();
  INFO(path << " received while held:\n" << received);
  CHECK_FALSE(joined.empty());
  CHECK(joined.size() < arguments.size());
  CHECK(arguments.starts_with(joined));
  bool closed = false;
  client.receive_until_closed(std::chrono::milliseconds(60000), closed);
}

}  // namespace

TEST_CASE("OpenAI tool calls and reasoning: whole and streamed", "[tool_calls][openai]") {
  TestServer server(jinja_options());
  const std::string path = "/v1/chat/completions";
  script_output(server, path, openai_tools_body(false), kOutput);

  const Reply whole = post(server, path, openai_tools_body(false));
  REQUIRE(whole.status == 200);
  const json choice = whole.body_json()["choices"][0];
  const json& message = choice["message"];
  CHECK(message["reasoning_content"] == "\nThe user wants the weather.\n");
  CHECK(message["reasoning"] == "\nThe user wants the weather.\n");
  CHECK(message["content"].is_null());  // only calls
  CHECK(without_ids(message["tool_calls"]) == kExpectedCalls);
  for (const json& call : message["tool_calls"]) CHECK(call["id"].get<std::string>().rfind("call_", 0) == 0);
  CHECK(message["tool_calls"][0]["id"] != message["tool_calls"][1]["id"]);
  CHECK(choice["finish_reason"] == "tool_calls");

  const JoinedOpenAI streamed = join_openai(post(server, path, openai_tools_body(true)).body);
  CHECK(streamed.reasoning == message["reasoning_content"]);
  CHECK(streamed.content == "");
  CHECK(without_ids(streamed.calls) == kExpectedCalls);
  CHECK(streamed.finish_reason == "tool_calls");

  SECTION("parallel_tool_calls false: the first call only") {
    json body = openai_tools_body(false);
    body["parallel_tool_calls"] = false;
    const json m = post(server, path, body).body_json()["choices"][0]["message"];
    CHECK(without_ids(m["tool_calls"]) == json::array({kExpectedCalls[0]}));
    body["stream"] = true;
    CHECK(without_ids(join_openai(post(server, path, body).body).calls) == json::array({kExpectedCalls[0]}));
  }
  SECTION("a call whose block max_tokens cut before its close comes when the output ends, streamed too") {
    // tool_choice auto's grammar lets a block end only at </tool_call>, so the
    // output is cut by max_tokens (one byte token each) right after the JSON.
    const std::string output = "Let me see.\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n";
    script_output(server, path, openai_tools_body(false), output);
    json body = openai_tools_body(false);
    body["max_tokens"] = output.size();
    const json c = post(server, path, body).body_json()["choices"][0];
    const json expected = json::array({{{"type", "function"}, {"function", {{"name", "get_time"}, {"arguments", "{}"}}}}});
    CHECK(c["message"]["content"] == "Let me see.\n");
    CHECK(without_ids(c["message"]["tool_calls"]) == expected);
    CHECK(c["finish_reason"] == "length");
    body["stream"] = true;
    const JoinedOpenAI s = join_openai(post(server, path, body).body);
    CHECK(s.content == "Let me see.\n");
    CHECK(without_ids(s.calls) == expected);
    CHECK(s.finish_reason == "length");
  }
  SECTION("a call's arguments stream as the model writes them; cut inside them, the call has the text written") {
    const std::string output = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
    script_output(server, path, openai_tools_body(false), output);
    json body = openai_tools_body(true);
    check_arguments_stream_early(server, path, body, output, R"({"city":"Paris"})", [](const json& chunk) {
      std::string piece;
      for (const json& c : chunk.value("choices", json::array()))
        if (c["delta"].contains("tool_calls") && !c["delta"]["tool_calls"][0].contains("id"))
          piece += c["delta"]["tool_calls"][0]["function"]["arguments"].get<std::string>();
      return piece;
    });
    const size_t cut = output.find("Par") + 3;
    body["max_tokens"] = cut;
    const json expected = json::array({{{"type", "function"}, {"function", {{"name", "get_weather"}, {"arguments", R"({"city":"Par)"}}}}});
    const JoinedOpenAI s = join_openai(post(server, path, body).body);
    CHECK(without_ids(s.calls) == expected);
    CHECK(s.finish_reason == "length");
    body["stream"] = false;
    const json c = post(server, path, body).body_json()["choices"][0];
    CHECK(without_ids(c["message"]["tool_calls"]) == expected);
    CHECK(c["finish_reason"] == "length");
  }
  SECTION("tool_choice none: no calls are read, the blocks are content") {
    json body = openai_tools_body(false);
    body["tool_choice"] = "none";
    const json c = post(server, path, body).body_json()["choices"][0];
    CHECK_FALSE(c["message"].contains("tool_calls"));
    CHECK(c["message"]["content"].get<std::string>().find("<tool_call>") != std::string::npos);
    CHECK(c["finish_reason"] == "stop");
  }
  SECTION("without tools the reasoning is still split, the rest is content") {
    json body = openai_tools_body(false);
    body.erase("tools");
    script_output(server, path, body, kOutput);  // another prompt (no tools in it)
    const json m = post(server, path, body).body_json()["choices"][0]["message"];
    CHECK(m["reasoning_content"] == "\nThe user wants the weather.\n");
    CHECK(m["content"].get<std::string>().starts_with("\n\n<tool_call>"));
  }
}

json responses_tools_body(bool stream) {
  json body = {{"model", "m"},
               {"input", "What is the weather in Paris?"},
               {"max_output_tokens", 400},
               {"stream", stream},
               {"tools", json::array()}};
  for (const json& t : {kWeatherTool, kTimeTool})
    body["tools"].push_back({{"type", "function"}, {"name", t["function"]["name"]}, {"parameters", t["function"]["parameters"]}});
  return body;
}

// A Responses stream read event by event: its last response, and each
// function_call's argument deltas counted, checking that the deltas join to
// the arguments their .done and output_item.done events give.
struct ResponsesStream {
  json response;
  std::vector<size_t> argument_deltas;  // per function_call, in output order
};

ResponsesStream read_responses_stream(const std::string& stream) {
  INFO(stream);
  ResponsesStream r;
  json items = json::array();
  std::map<int, std::string> arguments;  // output_index -> joined deltas
  for (const SseEvent& e : parse_sse(stream)) {
    const json data = json::parse(e.data);
    const std::string type = data["type"];
    if (type == "response.output_item.added") {
      REQUIRE(data["output_index"] == items.size());
      items.push_back(data["item"]);
      if (data["item"]["type"] == "function_call") {
        CHECK(data["item"]["status"] == "in_progress");
        CHECK(data["item"]["arguments"] == "");
        arguments[data["output_index"]] = "";
        r.argument_deltas.push_back(0);
      }
    } else if (type == "response.function_call_arguments.delta") {
      const int index = data["output_index"];
      REQUIRE(arguments.count(index));
      CHECK(data["item_id"] == items[size_t(index)]["id"]);
      arguments[index] += data["delta"].get<std::string>();
      ++r.argument_deltas.back();
    } else if (type == "response.function_call_arguments.done") {
      CHECK(data["arguments"] == arguments.at(data["output_index"]));
    } else if (type == "response.output_item.done" && data["item"]["type"] == "function_call") {
      CHECK(data["item"]["arguments"] == arguments.at(data["output_index"]));
    } else if (type == "response.completed" || type == "response.incomplete") {
      r.response = data["response"];
    }
  }
  return r;
}

// The output items without their ids (random per response).
json items_without_ids(json output) {
  for (json& item : output) item.erase("id");
  for (json& item : output) item.erase("call_id");
  return output;
}

// Responses' function_call items: each call's arguments stream as
// response.function_call_arguments.delta events as the model writes them
// (not one delta for the whole call), the stream's last response equals the
// whole one, and an output cut inside a call's arguments gives that call,
// its arguments as written and its status incomplete, whole and streamed.
TEST_CASE("Responses: function calls stream their arguments as they are written, whole equal to streamed",
          "[tool_calls][responses]") {
  TestServer server(jinja_options());
  const std::string path = "/v1/responses";
  script_output(server, path, responses_tools_body(false), kOutput);
  const json whole = post(server, path, responses_tools_body(false)).body_json();
  INFO(whole.dump());
  const json reasoning = {{"type", "reasoning"},
                          {"summary", json::array()},
                          {"content", json::array({{{"type", "reasoning_text"}, {"text", "\nThe user wants the weather.\n"}}})}};
  const auto call = [](const std::string& name, const std::string& arguments, const std::string& status) {
    return json{{"type", "function_call"}, {"status", status}, {"name", name}, {"arguments", arguments}};
  };
  CHECK(whole["status"] == "completed");
  CHECK(items_without_ids(whole["output"]) ==
        json::array({reasoning, call("get_weather", R"({"city":"Paris"})", "completed"),
                     call("get_time", R"({"tz":"CET"})", "completed")}));
  const ResponsesStream streamed = read_responses_stream(post(server, path, responses_tools_body(true)).body);
  CHECK(items_without_ids(streamed.response["output"]) == items_without_ids(whole["output"]));
  CHECK(streamed.argument_deltas.size() == 2);

  // As the model writes them: the loop held once the model has written
  // `{"city": "Par`, the client has received a proper prefix of the call's
  // arguments, before the rest of the call exists.
  check_arguments_stream_early(server, path, responses_tools_body(true), kOutput, R"({"city":"Paris"})",
                               [](const json& event) {
                                 return event["type"] == "response.function_call_arguments.delta" ? event["delta"].get<std::string>()
                                                                                                  : std::string();
                               });

  json body = responses_tools_body(false);
  body["max_output_tokens"] = std::string(kOutput).find("Par") + 3;
  const json cut = post(server, path, body).body_json();
  CHECK(cut["status"] == "incomplete");
  CHECK(items_without_ids(cut["output"]) == json::array({reasoning, call("get_weather", R"({"city":"Par)", "incomplete")}));
  body["stream"] = true;
  const ResponsesStream cut_stream = read_responses_stream(post(server, path, body).body);
  CHECK(cut_stream.response["status"] == "incomplete");
  CHECK(items_without_ids(cut_stream.response["output"]) == items_without_ids(cut["output"]));
}

TEST_CASE("Anthropic tool use and thinking: whole and streamed", "[tool_calls][anthropic]") {
  TestServer server(jinja_options());
  const std::string path = "/v1/messages";
  script_output(server, path, anthropic_tools_body(false), kOutput);

  const Reply whole = post(server, path, anthropic_tools_body(false));
  REQUIRE(whole.status == 200);
  const json body = whole.body_json();
  const json& content = body["content"];
  REQUIRE(content.size() == 3);
  CHECK(content[0] == json({{"type", "thinking"}, {"thinking", "\nThe user wants the weather.\n"}, {"signature", ""}}));
  CHECK(content[1]["type"] == "tool_use");
  CHECK(content[1]["name"] == "get_weather");
  CHECK(content[1]["input"] == json({{"city", "Paris"}}));
  CHECK(content[1]["id"].get<std::string>().rfind("toolu_", 0) == 0);
  CHECK(content[2]["name"] == "get_time");
  CHECK(content[2]["input"] == json({{"tz", "CET"}}));
  CHECK(body["stop_reason"] == "tool_use");

  // The stream's blocks, rebuilt from its events, equal the whole content.
  json stop_reason = nullptr;
  const json blocks = anthropic_stream_blocks(post(server, path, anthropic_tools_body(true)).body, stop_reason);
  check_same_blocks(blocks, content);
  CHECK(stop_reason == "tool_use");
  // input_json_delta as the model writes the arguments.
  check_arguments_stream_early(server, path, anthropic_tools_body(true), kOutput, R"({"city":"Paris"})", [](const json& event) {
    return event["type"] == "content_block_delta" && event["delta"]["type"] == "input_json_delta"
               ? event["delta"]["partial_json"].get<std::string>()
               : std::string();
  });
}

// Text the model writes before its calls is the response's first block, a
// text block, then the tool_use blocks in the model's order (Anthropic's own
// responses: "I'll check the weather." then tool_use), whole and streamed.
// Dropping that text whenever calls were made, or writing it after them,
// passed the suite before this test.
TEST_CASE("Anthropic: the text before tool_use blocks is a text block first, whole and streamed",
          "[tool_calls][anthropic]") {
  TestServer server(jinja_options());
  const std::string path = "/v1/messages";
  const std::string output =
      "Let me check the weather and the time.\n"
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}\n</tool_call>";
  script_output(server, path, anthropic_tools_body(false), output);
  const Reply whole = post(server, path, anthropic_tools_body(false));
  REQUIRE(whole.status == 200);
  const json content = whole.body_json()["content"];
  INFO(content.dump());
  REQUIRE(content.size() == 3);
  CHECK(content[0] == json({{"type", "text"}, {"text", "Let me check the weather and the time.\n"}}));
  CHECK(content[1]["type"] == "tool_use");
  CHECK(content[1]["input"] == json({{"city", "Paris"}}));
  CHECK(content[2]["type"] == "tool_use");
  CHECK(content[2]["input"] == json({{"tz", "CET"}}));
  CHECK(whole.body_json()["stop_reason"] == "tool_use");
  json stop_reason = nullptr;
  const json blocks = anthropic_stream_blocks(post(server, path, anthropic_tools_body(true)).body, stop_reason);
  check_same_blocks(blocks, content);
  CHECK(stop_reason == "tool_use");
}

TEST_CASE("Tools, tool turns and chat_template_kwargs reach the template as transformers passes them",
          "[tool_calls][template]") {
  TestServer server(jinja_options());
  const HfChatTemplate direct(template_config_for(kTemplate, server.engine().tokenizer()));
  auto tokens_of = [&](const json& request) {
    return int(server.engine().tokenizer().encode_with_special_tokens(direct.render_request(request)).size());
  };
  // The conversation in transformers' shape: arguments as objects, tool turns with their ids.
  const json conversation = json::array(
      {{{"role", "user"}, {"content", "Weather in Paris?"}},
       {{"role", "assistant"},
        {"content", nullptr},
        {"tool_calls", json::array({{{"id", "call_1"}, {"type", "function"},
                                     {"function", {{"name", "get_weather"}, {"arguments", {{"city", "Paris"}}}}}}})}},
       {{"role", "tool"}, {"content", "18 C, sunny"}, {"tool_call_id", "call_1"}}});
  const int expected = tokens_of({{"messages", conversation}, {"tools", json::array({kWeatherTool})}, {"add_generation_prompt", true}});
  const int without_thinking = tokens_of({{"messages", conversation},
                                          {"tools", json::array({kWeatherTool})},
                                          {"add_generation_prompt", true},
                                          {"enable_thinking", false}});
  REQUIRE(without_thinking > expected);

  SECTION("OpenAI: assistant tool_calls (arguments as JSON text) and tool messages") {
    json body = openai_body("", 1);
    body["messages"] = json::array(
        {{{"role", "user"}, {"content", "Weather in Paris?"}},
         {{"role", "assistant"},
          {"content", nullptr},
          {"tool_calls", json::array({{{"id", "call_1"}, {"type", "function"},
                                       {"function", {{"name", "get_weather"}, {"arguments", R"({"city": "Paris"})"}}}}})}},
         {{"role", "tool"}, {"content", "18 C, sunny"}, {"tool_call_id", "call_1"}}});
    body["tools"] = json::array({kWeatherTool});
    const Reply reply = post(server, "/v1/chat/completions", body);
    REQUIRE(reply.status == 200);
    CHECK(reply.body_json()["usage"]["prompt_tokens"] == expected);
    body["chat_template_kwargs"] = {{"enable_thinking", false}};
    CHECK(post(server, "/v1/chat/completions", body).body_json()["usage"]["prompt_tokens"] == without_thinking);
  }
  SECTION("Anthropic: tool_use and tool_result blocks") {
    json body = anthropic_body("", 1);
    body["messages"] = json::array(
        {{{"role", "user"}, {"content", "Weather in Paris?"}},
         {{"role", "assistant"},
          {"content", json::array({{{"type", "tool_use"}, {"id", "call_1"}, {"name", "get_weather"}, {"input", {{"city", "Paris"}}}}})}},
         {{"role", "user"},
          {"content", json::array({{{"type", "tool_result"}, {"tool_use_id", "call_1"},
                                    {"content", json::array({{{"type", "text"}, {"text", "18 C, sunny"}}})}}})}}});
    body["tools"] = json::array({{{"name", "get_weather"},
                                  {"description", "The weather in a city"},
                                  {"input_schema", kWeatherTool["function"]["parameters"]}}});
    const Reply reply = post(server, "/v1/messages", body);
    REQUIRE(reply.status == 200);
    CHECK(reply.body_json()["usage"]["input_tokens"] == expected);
  }
}

TEST_CASE("Malformed tools and tool choices are a 400 naming the field", "[tool_calls][errors]") {
  TestServer server(jinja_options());
  struct Bad {
    json tools;
    json tool_choice;
    std::string named;
  };
  const std::vector<Bad> openai_cases = {
      {"not a list", nullptr, "tools"},
      {json::array({{{"type", "retrieval"}}}), nullptr, "tools[0].type"},
      {json::array({{{"type", "function"}, {"function", {{"description", "x"}}}}}), nullptr, "tools[0].function.name"},
      {json::array({{{"type", "function"}, {"function", {{"name", "has space"}}}}}), nullptr, "tools[0].function.name"},
      {json::array({{{"type", "function"}, {"function", {{"name", "f"}, {"parameters", "object"}}}}}), nullptr,
       "tools[0].function.parameters"},
      {json::array({kWeatherTool, kWeatherTool}), nullptr, "tools[1].function.name"},
      {json::array({kWeatherTool}), {{"type", "function"}, {"function", {{"name", "nope"}}}}, "nope"},
      {nullptr, "required", "tool_choice"},
      {json::array({kWeatherTool}), "sometimes", "tool_choice"},
  };
  for (const Bad& bad : openai_cases) {
    json body = openai_body("hi", 4);
    if (!bad.tools.is_null()) body["tools"] = bad.tools;
    if (!bad.tool_choice.is_null()) body["tool_choice"] = bad.tool_choice;
    INFO(body.dump());
    const Reply reply = post(server, "/v1/chat/completions", body);
    CHECK(reply.status == 400);
    CHECK(reply.body_json()["error"]["message"].get<std::string>().find(bad.named) != std::string::npos);
  }
  for (const auto& [tools, named] : std::vector<std::pair<json, std::string>>{
           {json::array({{{"name", "f"}}}), "tools.0.input_schema"},
           {json::array({{{"name", "f"}, {"input_schema", 3}}}), "tools.0.input_schema"},
           {json::array({{{"type", "web_search_20250305"}, {"name", "web_search"}}}), "tools.0.type"}}) {
    json body = anthropic_body("hi", 4);
    body["tools"] = tools;
    const Reply reply = post(server, "/v1/messages", body);
    CHECK(reply.status == 400);
    CHECK(reply.body_json()["error"]["message"].get<std::string>().find(named) != std::string::npos);
  }
  SECTION("a built-in template cannot show tools: 400 saying so") {
    TestServer plain;  // the plain template
    json body = openai_body("hi", 4);
    body["tools"] = json::array({kWeatherTool});
    const Reply reply = post(plain, "/v1/chat/completions", body);
    CHECK(reply.status == 400);
    CHECK(reply.body_json()["error"]["message"].get<std::string>().find("built-in chat template") != std::string::npos);
  }
  SECTION("a required call and an output constraint cannot both apply: 400 saying so") {
    json body = openai_body("hi", 4);
    body["tools"] = json::array({kWeatherTool});
    body["tool_choice"] = "required";
    body["response_format"] = {{"type", "json_object"}};
    const Reply reply = post(server, "/v1/chat/completions", body);
    CHECK(reply.status == 400);
    CHECK(reply.body_json()["error"]["message"].get<std::string>().find("cannot both apply") != std::string::npos);
    body["tool_choice"] = "auto";  // auto is not enforced: nothing to conflict with
    CHECK(post(server, "/v1/chat/completions", body).status == 200);
  }
  SECTION("a parameters schema the grammar refuses is a 400 naming the tool") {
    json body = openai_body("hi", 4);
    body["tools"] = json::array({{{"type", "function"},
                                  {"function", {{"name", "f"}, {"parameters", {{"type", "object"}, {"not", json::object()}}}}}}});
    body["tool_choice"] = "required";
    const Reply reply = post(server, "/v1/chat/completions", body);
    CHECK(reply.status == 400);
    CHECK(reply.body_json()["error"]["message"].get<std::string>().find("tool 'f'") != std::string::npos);
  }
}

namespace {

// Tools whose every call is short (enums, booleans, one digit), so that a
// random model at temperature 1 always finishes its calls.
const json kShortTools = json::parse(R"([
  {"type": "function", "function": {"name": "set_color", "parameters": {"type": "object",
    "properties": {"color": {"enum": ["red", "green", "blue"]}, "ok": {"type": "boolean"}},
    "required": ["color", "ok"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "count", "parameters": {"type": "object",
    "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["n"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "toggle", "parameters": {"type": "object",
    "properties": {"on": {"type": "boolean"}}, "required": ["on"], "additionalProperties": false}}}
])");

// kShortTools in Anthropic's shape and in the Responses API's (flat).
json anthropic_short_tools() {
  json tools = json::array();
  for (const json& t : kShortTools) tools.push_back({{"name", t["function"]["name"]}, {"input_schema", t["function"]["parameters"]}});
  return tools;
}

json responses_short_tools() {
  json tools = json::array();
  for (const json& t : kShortTools)
    tools.push_back({{"type", "function"}, {"name", t["function"]["name"]}, {"parameters", t["function"]["parameters"]}});
  return tools;
}

// Room for the tools in the prompt and several calls after it.
TestServerOptions long_context_options() {
  TestServerOptions options = jinja_options();
  options.context = 2048;
  return options;
}

// The tools' rules, checked by hand on a call (independent of the grammar).
void check_short_call(const std::string& name, const json& arguments) {
  INFO(name << " " << arguments.dump());
  REQUIRE(arguments.is_object());
  if (name == "set_color") {
    CHECK(arguments.size() == 2);
    CHECK(std::set<std::string>{"red", "green", "blue"}.count(arguments.value("color", "")) == 1);
    CHECK(arguments.contains("ok"));
    CHECK(arguments.value("ok", json()).is_boolean());
  } else if (name == "count") {
    CHECK(arguments.size() == 1);
    REQUIRE(arguments.contains("n"));
    REQUIRE(arguments["n"].is_number_integer());
    CHECK(arguments["n"].get<int>() >= 0);
    CHECK(arguments["n"].get<int>() <= 9);
  } else if (name == "toggle") {
    CHECK(arguments.size() == 1);
    CHECK(arguments.value("on", json()).is_boolean());
  } else {
    FAIL("a call to a tool that was not given: " << name);
  }
}

}  // namespace

TEST_CASE("tool_choice required and named: a random model's output is valid calls; streamed equals whole",
          "[tool_calls][openai][grammar]") {
  TestServer server(long_context_options());
  const std::string path = "/v1/chat/completions";
  size_t most_calls = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    json body = openai_body("Do something", 1);
    body.erase("max_tokens");  // until the grammar ends (or the context: then the test fails on "length")
    body["temperature"] = 1.0;
    body["seed"] = seed;
    body["tools"] = kShortTools;
    // No thinking (the template closes it in the prompt): the calls start at the first token.
    body["chat_template_kwargs"] = {{"enable_thinking", false}};
    const std::string named = seed % 4 == 0 ? "count" : "toggle";
    if (seed % 2) body["tool_choice"] = "required";
    else body["tool_choice"] = {{"type", "function"}, {"function", {{"name", named}}}};
    const bool single = seed % 3 != 0;
    body["parallel_tool_calls"] = !single;
    INFO(body.dump());
    const Reply whole = post(server, path, body);
    INFO(whole.body);
    REQUIRE(whole.status == 200);
    const json choice = whole.body_json()["choices"][0];
    CHECK(choice["finish_reason"] == "tool_calls");
    CHECK(choice["message"]["content"].is_null());
    const json& calls = choice["message"]["tool_calls"];
    REQUIRE(calls.is_array());
    REQUIRE(!calls.empty());
    if (single) CHECK(calls.size() == 1);
    most_calls = std::max(most_calls, calls.size());
    for (const json& call : calls) {
      const std::string name = call["function"]["name"];
      if (seed % 2 == 0) CHECK(name == named);
      check_short_call(name, json::parse(call["function"]["arguments"].get<std::string>(), nullptr, false));
    }
    body["stream"] = true;
    const JoinedOpenAI streamed = join_openai(post(server, path, body).body);
    CHECK(without_ids(streamed.calls) == without_ids(calls));
    CHECK(streamed.content == "");
    CHECK(streamed.finish_reason == "tool_calls");
  }
  // The seeds are fixed, so this is deterministic: some parallel request wrote several calls.
  CHECK(most_calls > 1);
}

TEST_CASE("Anthropic tool_choice any and tool: a random model's output is one valid tool_use", "[tool_calls][anthropic][grammar]") {
  TestServer server(long_context_options());
  for (int k = 1; k <= 4; ++k) {
    json body = anthropic_body("Do something", 1000);
    body["temperature"] = 1.0;  // unseeded (Anthropic has no seed): any path the grammar allows must do
    body["thinking"] = {{"type", "disabled"}};  // the calls start at the first token
    body["tools"] = anthropic_short_tools();
    body["tool_choice"] = k % 2 ? json{{"type", "any"}} : json{{"type", "tool"}, {"name", "set_color"}};
    body["tool_choice"]["disable_parallel_tool_use"] = true;
    INFO(body.dump());
    const Reply reply = post(server, "/v1/messages", body);
    INFO(reply.body);
    REQUIRE(reply.status == 200);
    const json r = reply.body_json();
    CHECK(r["stop_reason"] == "tool_use");
    REQUIRE(r["content"].size() == 1);
    const json& block = r["content"][0];
    REQUIRE(block["type"] == "tool_use");
    if (k % 2 == 0) CHECK(block["name"] == "set_color");
    check_short_call(block["name"], block["input"]);
  }
}

TEST_CASE("a reasoning model thinks first: tool and output grammars apply after </think>", "[tool_calls][grammar][reasoning]") {
  TestServer server(long_context_options());
  const std::string path = "/v1/chat/completions";
  const std::string thinking = "<think>\nI will count.\n</think>\n\n";
  // The scripted thinking, then the random model (temperature 1) under the grammar.
  const auto scripted = [&](const json& body) { script_prefix(server, path, body, thinking); };
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    json body = openai_body("Count something", 1);
    body.erase("max_tokens");
    body["temperature"] = 1.0;
    body["seed"] = seed;
    body["tools"] = kShortTools;
    body["parallel_tool_calls"] = false;
    SECTION("tool_choice required, seed " + std::to_string(seed)) {
      body["tool_choice"] = "required";
      scripted(body);
      const Reply reply = post(server, path, body);
      INFO(reply.body);
      REQUIRE(reply.status == 200);
      const json choice = reply.body_json()["choices"][0];
      CHECK(choice["message"]["reasoning_content"] == "\nI will count.\n");
      CHECK(choice["finish_reason"] == "tool_calls");
      REQUIRE(choice["message"]["tool_calls"].size() == 1);
      const json& call = choice["message"]["tool_calls"][0]["function"];
      check_short_call(call["name"], json::parse(call["arguments"].get<std::string>(), nullptr, false));
    }
    SECTION("response_format json_schema, seed " + std::to_string(seed)) {
      body.erase("tools");
      body["response_format"] = {{"type", "json_schema"},
                                 {"json_schema", {{"name", "count"}, {"schema", kShortTools[1]["function"]["parameters"]}}}};
      scripted(body);
      const Reply reply = post(server, path, body);
      INFO(reply.body);
      REQUIRE(reply.status == 200);
      const json message = reply.body_json()["choices"][0]["message"];
      CHECK(message["reasoning_content"] == "\nI will count.\n");
      check_short_call("count", json::parse(message["content"].get<std::string>(), nullptr, false));
    }
  }
}

// Thinking budgets (engine/grammar/thinking_budget.h, reasoning_effort.h):
// the scripted "<think>\n" opens the thinking (8 byte tokens, counted), the
// random model thinks on (it never writes "</think>" itself), the budget
// forces the close, and the grammar's answer follows. Without a budget the
// model thinks to max_tokens: finish_reason "length", no call, no JSON.
// reasoning_tokens: the budget's tokens, then the close's (1 to 8 of them).
TEST_CASE("thinking budgets close the thinking so that the constrained answer comes", "[tool_calls][grammar][reasoning][budget]") {
  TestServer server(long_context_options());
  const std::string thinking = "<think>\n";
  // script_prefix for any of the three protocols: the prompt's length asked
  // without the constraint and whole, then the thinking scripted after it.
  const auto script_thinking = [&](const std::string& path, json probe) {
    probe.erase("tool_choice");
    probe.erase("response_format");
    probe["stream"] = false;
    probe[path == "/v1/responses" ? "max_output_tokens" : "max_tokens"] = 1;
    if (probe.contains("thinking")) probe["thinking"].erase("budget_tokens");  // not below 1 token
    server.executor().script({}, 0, -1);
    const Reply reply = post(server, path, probe);
    REQUIRE(reply.status == 200);
    const json usage = reply.body_json()["usage"];
    const int prompt = usage.contains("prompt_tokens") ? usage["prompt_tokens"].get<int>()
                                                       : usage["input_tokens"].get<int>() + usage.value("cache_read_input_tokens", 0);
    std::vector<int> tokens;
    for (unsigned char b : thinking) tokens.push_back(server.engine().tokenizer().byte_token(b));
    server.executor().script(tokens, prompt, -1);
  };
  const auto check_reasoning_tokens = [](const json& count, int budget) {
    INFO("reasoning_tokens " << count << ", budget " << budget);
    REQUIRE(count.is_number_integer());
    CHECK(count.get<int>() > budget);
    CHECK(count.get<int>() <= budget + 8);
  };
  for (uint64_t seed = 1; seed <= 2; ++seed) {
    SECTION("OpenAI chat: reasoning_effort low under tool_choice required, whole and streamed, seed " + std::to_string(seed)) {
      const std::string path = "/v1/chat/completions";
      json body = openai_body("Count something", 600);
      body["temperature"] = 1.0;
      body["seed"] = seed;
      body["tools"] = kShortTools;
      body["parallel_tool_calls"] = false;
      body["tool_choice"] = "required";
      body["reasoning_effort"] = "low";  // 1,024 tokens, at most half of max_tokens: 300
      script_thinking(path, body);
      const Reply reply = post(server, path, body);
      INFO(reply.body);
      REQUIRE(reply.status == 200);
      const json whole = reply.body_json();
      const json choice = whole["choices"][0];
      CHECK(choice["finish_reason"] == "tool_calls");
      CHECK(choice["message"]["reasoning_content"].get<std::string>().starts_with("\n"));
      REQUIRE(choice["message"]["tool_calls"].size() == 1);
      const json& call = choice["message"]["tool_calls"][0]["function"];
      check_short_call(call["name"], json::parse(call["arguments"].get<std::string>(), nullptr, false));
      check_reasoning_tokens(whole["usage"]["completion_tokens_details"]["reasoning_tokens"], 300);
      // The same seed streamed: the same tokens, so the same usage in its last chunk.
      body["stream"] = true;
      body["stream_options"] = {{"include_usage", true}};
      script_thinking(path, body);
      const Reply streamed = post(server, path, body);
      REQUIRE(streamed.status == 200);
      const std::vector<SseEvent> events = parse_sse(streamed.body);
      REQUIRE(events.size() >= 2);
      CHECK(json::parse(events[events.size() - 2].data)["usage"] == whole["usage"]);
    }
    SECTION("OpenAI chat: no effort, a response format: half of max_tokens, seed " + std::to_string(seed)) {
      const std::string path = "/v1/chat/completions";
      json body = openai_body("Count something", 600);
      body["temperature"] = 1.0;
      body["seed"] = seed;
      body["response_format"] = {{"type", "json_schema"},
                                 {"json_schema", {{"name", "count"}, {"schema", kShortTools[1]["function"]["parameters"]}}}};
      script_thinking(path, body);
      const Reply reply = post(server, path, body);
      INFO(reply.body);
      REQUIRE(reply.status == 200);
      const json whole = reply.body_json();
      CHECK(whole["choices"][0]["finish_reason"] == "stop");
      check_short_call("count", json::parse(whole["choices"][0]["message"]["content"].get<std::string>(), nullptr, false));
      check_reasoning_tokens(whole["usage"]["completion_tokens_details"]["reasoning_tokens"], 300);
    }
  }
  SECTION("Anthropic: thinking.budget_tokens under tool_choice any") {
    const std::string path = "/v1/messages";
    json body = anthropic_body("Count something", 600);
    body["temperature"] = 1.0;
    body["thinking"] = {{"type", "enabled"}, {"budget_tokens", 40}};
    body["tools"] = anthropic_short_tools();
    body["tool_choice"] = {{"type", "any"}, {"disable_parallel_tool_use", true}};
    script_thinking(path, body);
    const Reply reply = post(server, path, body);
    INFO(reply.body);
    REQUIRE(reply.status == 200);
    const json r = reply.body_json();
    CHECK(r["stop_reason"] == "tool_use");
    REQUIRE(r["content"].size() == 2);
    CHECK(r["content"][0]["type"] == "thinking");
    REQUIRE(r["content"][1]["type"] == "tool_use");
    check_short_call(r["content"][1]["name"], r["content"][1]["input"]);
    // Anthropic's rule: the budget below max_tokens.
    body["thinking"]["budget_tokens"] = 600;
    const Reply refused = post(server, path, body);
    CHECK(refused.status == 400);
    CHECK(refused.body.find("max_tokens must be greater than thinking.budget_tokens") != std::string::npos);
  }
  SECTION("Responses: reasoning.effort low under tool_choice required") {
    const std::string path = "/v1/responses";
    json body = {{"model", "m"},
                 {"input", "Count something"},
                 {"max_output_tokens", 600},
                 {"temperature", 1.0},
                 {"tool_choice", "required"},
                 {"parallel_tool_calls", false},
                 {"reasoning", {{"effort", "low"}}},
                 {"tools", responses_short_tools()}};
    script_thinking(path, body);
    const Reply reply = post(server, path, body);
    INFO(reply.body);
    REQUIRE(reply.status == 200);
    const json r = reply.body_json();
    CHECK(r["status"] == "completed");
    REQUIRE(r["output"].size() == 2);
    CHECK(r["output"][0]["type"] == "reasoning");
    REQUIRE(r["output"][1]["type"] == "function_call");
    check_short_call(r["output"][1]["name"], json::parse(r["output"][1]["arguments"].get<std::string>(), nullptr, false));
    check_reasoning_tokens(r["usage"]["output_tokens_details"]["reasoning_tokens"], 300);
  }
}

// gpt-oss's harmony messages (engine/chat_planning/harmony_output.h) behind a
// small template of its shape: the server reads reasoning and calls out of
// the analysis and commentary channels, and hands past reasoning and
// reasoning_effort to the template as gpt-oss's does (thinking, the variable).
constexpr const char* kHarmonyTemplate = R"(
{%- if reasoning_effort is defined %}<|start|>system<|message|>Reasoning: {{ reasoning_effort }}<|end|>{% endif %}
{%- if tools %}<|start|>developer<|message|>{% for t in tools %}type {{ t.function.name }};{% endfor %}<|end|>{% endif %}
{%- for m in messages %}
{%- if m.tool_calls %}{% if m.thinking %}<|start|>assistant<|channel|>analysis<|message|>{{ m.thinking }}<|end|>{% endif %}
<|start|>assistant to=functions.{{ m.tool_calls[0].function.name }}<|channel|>commentary json<|message|>{{ m.tool_calls[0].function.arguments | tojson }}<|call|>
{%- elif m.role == 'tool' %}<|start|>functions.x to=assistant<|channel|>commentary<|message|>{{ m.content | tojson }}<|end|>
{%- else %}<|start|>{{ m.role }}<|message|>{{ m.content }}<|end|>{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|start|>assistant{% endif %})";

TestServerOptions harmony_options() {
  TestServerOptions options;
  options.context = 2048;
  options.jinja_template = kHarmonyTemplate;
  return options;
}

constexpr const char* kHarmonyCall =
    "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary "
    "to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}";

TEST_CASE("gpt-oss's harmony output: analysis is reasoning, a message to functions.NAME a call, whole and streamed",
          "[tool_calls][harmony]") {
  TestServer server(harmony_options());
  SECTION("OpenAI") {
    const std::string path = "/v1/chat/completions";
    script_output(server, path, openai_tools_body(false), kHarmonyCall);
    const json choice = post(server, path, openai_tools_body(false)).body_json()["choices"][0];
    INFO(choice.dump());
    CHECK(choice["message"]["reasoning_content"] == "Need the weather.");
    CHECK(choice["message"]["content"].is_null());
    CHECK(without_ids(choice["message"]["tool_calls"]) == json::array({kExpectedCalls[0]}));
    CHECK(choice["finish_reason"] == "tool_calls");
    const JoinedOpenAI streamed = join_openai(post(server, path, openai_tools_body(true)).body);
    CHECK(streamed.reasoning == "Need the weather.");
    CHECK(streamed.content == "");
    CHECK(without_ids(streamed.calls) == json::array({kExpectedCalls[0]}));
    CHECK(streamed.finish_reason == "tool_calls");
  }
  SECTION("Anthropic") {
    const std::string path = "/v1/messages";
    script_output(server, path, anthropic_tools_body(false), kHarmonyCall);
    const json whole = post(server, path, anthropic_tools_body(false)).body_json();
    INFO(whole.dump());
    const json& content = whole["content"];
    REQUIRE(content.size() == 2);
    CHECK(content[0] == json({{"type", "thinking"}, {"thinking", "Need the weather."}, {"signature", ""}}));
    CHECK(content[1]["name"] == "get_weather");
    CHECK(content[1]["input"] == json({{"city", "Paris"}}));
    CHECK(whole["stop_reason"] == "tool_use");
    json stop_reason = nullptr;
    check_same_blocks(anthropic_stream_blocks(post(server, path, anthropic_tools_body(true)).body, stop_reason), content);
    CHECK(stop_reason == "tool_use");
  }
  SECTION("Responses: the analysis is a reasoning item, the call a function_call item") {
    const std::string path = "/v1/responses";
    script_output(server, path, responses_tools_body(false), kHarmonyCall);
    const json whole = post(server, path, responses_tools_body(false)).body_json();
    INFO(whole.dump());
    const json expected = json::array(
        {{{"type", "reasoning"},
          {"summary", json::array()},
          {"content", json::array({{{"type", "reasoning_text"}, {"text", "Need the weather."}}})}},
         {{"type", "function_call"}, {"status", "completed"}, {"name", "get_weather"}, {"arguments", R"({"city":"Paris"})"}}});
    CHECK(items_without_ids(whole["output"]) == expected);
    CHECK(whole["status"] == "completed");
    const ResponsesStream streamed = read_responses_stream(post(server, path, responses_tools_body(true)).body);
    CHECK(items_without_ids(streamed.response["output"]) == expected);
  }
  SECTION("an answer in the final channel is the content") {
    const std::string path = "/v1/chat/completions";
    const json body = openai_body("Hi", 400);
    script_output(server, path, body,
                  "<|channel|>analysis<|message|>A greeting.<|end|><|start|>assistant<|channel|>final<|message|>Hello!");
    const json choice = post(server, path, body).body_json()["choices"][0];
    CHECK(choice["message"]["reasoning_content"] == "A greeting.");
    CHECK(choice["message"]["content"] == "Hello!");
    CHECK(choice["finish_reason"] == "stop");
    json stream_body = body;
    stream_body["stream"] = true;
    const JoinedOpenAI streamed = join_openai(post(server, path, stream_body).body);
    CHECK(streamed.reasoning == "A greeting.");
    CHECK(streamed.content == "Hello!");
  }
}

TEST_CASE("gpt-oss: tool and output grammars follow the optional analysis message", "[tool_calls][grammar][harmony]") {
  TestServer server(harmony_options());
  const std::string path = "/v1/chat/completions";
  const std::string analysis = "<|channel|>analysis<|message|>I will count.<|end|><|start|>assistant";
  // The scripted analysis, then the random model (temperature 1) under the grammar.
  const auto scripted = [&](const json& body) { script_prefix(server, path, body, analysis); };
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    json body = openai_body("Count something", 1);
    body.erase("max_tokens");
    body["temperature"] = 1.0;
    body["seed"] = seed;
    body["tools"] = kShortTools;
    SECTION("tool_choice required, seed " + std::to_string(seed)) {
      body["tool_choice"] = "required";  // one call: harmony's <|call|> ends the turn, parallel_tool_calls or not
      scripted(body);
      const Reply reply = post(server, path, body);
      INFO(reply.body);
      REQUIRE(reply.status == 200);
      const json choice = reply.body_json()["choices"][0];
      CHECK(choice["message"]["reasoning_content"] == "I will count.");
      CHECK(choice["finish_reason"] == "tool_calls");
      REQUIRE(choice["message"]["tool_calls"].size() == 1);
      const json& call = choice["message"]["tool_calls"][0]["function"];
      check_short_call(call["name"], json::parse(call["arguments"].get<std::string>(), nullptr, false));
    }
    SECTION("response_format json_schema, seed " + std::to_string(seed)) {
      body.erase("tools");
      body["response_format"] = {{"type", "json_schema"},
                                 {"json_schema", {{"name", "count"}, {"schema", kShortTools[1]["function"]["parameters"]}}}};
      scripted(body);
      const Reply reply = post(server, path, body);
      INFO(reply.body);
      REQUIRE(reply.status == 200);
      const json message = reply.body_json()["choices"][0]["message"];
      CHECK(message["reasoning_content"] == "I will count.");
      check_short_call("count", json::parse(message["content"].get<std::string>(), nullptr, false));
    }
  }
}

// gpt-oss's thinking budget: its analysis message is the thinking, closed by
// "<|end|><|start|>assistant" (harmony_markers). The scripted message opener,
// then the random model analyses on (it never writes the close itself) until
// reasoning_effort low's budget (half of max_tokens: 300) forces the close,
// and the call the grammar requires follows. Before the budget applied to
// harmony, the analysis ran to max_tokens: finish_reason "length", no call.
TEST_CASE("gpt-oss: reasoning_effort closes the analysis at its budget, then the call comes", "[tool_calls][grammar][harmony][budget]") {
  TestServer server(harmony_options());
  const std::string path = "/v1/chat/completions";
  const std::string close = "<|end|><|start|>assistant";
  for (uint64_t seed = 1; seed <= 2; ++seed) {
    INFO("seed " << seed);
    json body = openai_body("Count something", 600);
    body["temperature"] = 1.0;
    body["seed"] = seed;
    body["tools"] = kShortTools;
    body["tool_choice"] = "required";
    body["reasoning_effort"] = "low";
    script_prefix(server, path, body, "<|channel|>analysis<|message|>");
    const Reply reply = post(server, path, body);
    INFO(reply.body);
    REQUIRE(reply.status == 200);
    const json whole = reply.body_json();
    const json choice = whole["choices"][0];
    CHECK(choice["finish_reason"] == "tool_calls");
    CHECK_FALSE(choice["message"]["reasoning_content"].get<std::string>().empty());
    REQUIRE(choice["message"]["tool_calls"].size() == 1);
    const json& call = choice["message"]["tool_calls"][0]["function"];
    check_short_call(call["name"], json::parse(call["arguments"].get<std::string>(), nullptr, false));
    const int reasoning_tokens = whole["usage"]["completion_tokens_details"]["reasoning_tokens"];
    CHECK(reasoning_tokens > 300);
    CHECK(reasoning_tokens <= 300 + int(close.size()));  // the forced close: at most a token per byte
  }
}

TEST_CASE("gpt-oss: past reasoning and reasoning_effort reach its template", "[tool_calls][template][harmony]") {
  TestServer server(harmony_options());
  const HfChatTemplate direct(template_config_for(kHarmonyTemplate, server.engine().tokenizer()));
  auto tokens_of = [&](const json& request) {
    return int(server.engine().tokenizer().encode_with_special_tokens(direct.render_request(request)).size());
  };
  const json call = {{"id", "call_1"}, {"type", "function"}, {"function", {{"name", "get_weather"}, {"arguments", {{"city", "Paris"}}}}}};
  const json conversation = json::array(
      {{{"role", "user"}, {"content", "Weather in Paris?"}},
       {{"role", "assistant"}, {"content", ""}, {"thinking", "Need the weather."}, {"tool_calls", json::array({call})}},
       {{"role", "tool"}, {"content", "18 C"}, {"tool_call_id", "call_1"}}});
  const int expected = tokens_of({{"messages", conversation}, {"tools", json::array({kWeatherTool})},
                                  {"add_generation_prompt", true}, {"reasoning_effort", "high"}});
  const int expected_no_effort =  // Anthropic's API has no reasoning_effort
      tokens_of({{"messages", conversation}, {"tools", json::array({kWeatherTool})}, {"add_generation_prompt", true}});
  REQUIRE(expected > expected_no_effort);
  SECTION("OpenAI: reasoning_content and reasoning_effort") {
    json body = openai_body("", 1);
    json sent_call = call;
    sent_call["function"]["arguments"] = R"({"city": "Paris"})";
    body["messages"] = json::array(
        {{{"role", "user"}, {"content", "Weather in Paris?"}},
         {{"role", "assistant"}, {"content", nullptr}, {"reasoning_content", "Need the weather."}, {"tool_calls", json::array({sent_call})}},
         {{"role", "tool"}, {"content", "18 C"}, {"tool_call_id", "call_1"}}});
    body["tools"] = json::array({kWeatherTool});
    body["reasoning_effort"] = "high";
    const Reply reply = post(server, "/v1/chat/completions", body);
    REQUIRE(reply.status == 200);
    CHECK(reply.body_json()["usage"]["prompt_tokens"] == expected);
    body["messages"][1].erase("reasoning_content");  // vLLM's newer name does the same
    body["messages"][1]["reasoning"] = "Need the weather.";
    CHECK(post(server, "/v1/chat/completions", body).body_json()["usage"]["prompt_tokens"] == expected);
    body["reasoning_effort"] = "extreme";
    const Reply refused = post(server, "/v1/chat/completions", body);
    CHECK(refused.status == 400);
    CHECK(refused.body_json()["error"]["message"].get<std::string>().find("reasoning_effort") != std::string::npos);
  }
  SECTION("Anthropic: a thinking block") {
    json body = anthropic_body("", 1);
    body["messages"] = json::array(
        {{{"role", "user"}, {"content", "Weather in Paris?"}},
         {{"role", "assistant"},
          {"content", json::array({{{"type", "thinking"}, {"thinking", "Need the weather."}, {"signature", "s"}},
                                   {{"type", "tool_use"}, {"id", "call_1"}, {"name", "get_weather"}, {"input", {{"city", "Paris"}}}}})}},
         {{"role", "user"},
          {"content", json::array({{{"type", "tool_result"}, {"tool_use_id", "call_1"}, {"content", "18 C"}}})}}});
    body["tools"] = json::array({{{"name", "get_weather"}, {"input_schema", kWeatherTool["function"]["parameters"]}}});
    const Reply reply = post(server, "/v1/messages", body);
    REQUIRE(reply.status == 200);
    CHECK(reply.body_json()["usage"]["input_tokens"] == expected_no_effort);
  }
}

}  // namespace astrai::test
