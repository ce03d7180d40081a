// Fuzz target: POST /v1/responses bodies (server/protocols/responses_builder.h)
// before the engine sees them, and every formatter of an accepted request.
//
// Input layout: byte 0 is the length L of a piece of "generated" text, the
// next L bytes that text (what the formatters carry: reasoning, content, a
// call's arguments), the rest the request body.
//
// Properties (a failure aborts with "fuzz property violated: ..."):
//  1. parse_chat_request never throws; a refusal is OpenAI's 400, {"error":
//     {"message": non-empty, "type": "invalid_request_error", "param": null
//     or a string, "code": null or a string}}, written as JSON that parses back.
//  2. An accepted request has a turn besides its system turns, and sampling
//     parameters SamplingParams::validate() accepts.
//  3. The stream (start, reasoning, content, a call, the choice's end, the
//     stream's end; or the same cut by an error) is well-formed server-sent
//     events: each event's name is its data's "type", sequence_number counts
//     0, 1, 2, ... without a gap; its last event is response.completed or
//     response.incomplete (response.failed after an error) whose response's
//     output_text and call arguments are the generated text, when that text
//     is valid UTF-8.
//  4. The whole response is a JSON object whose output_text is the text.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/protocols/chat_request_parser.h"
#include "server/protocols/responses_builder.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/written_json.h"

namespace astrai::fuzz {
namespace {

using json = nlohmann::ordered_json;

bool string_or_null(const json& v) { return v.is_null() || v.is_string(); }

void check_refusal(const ParsedChatRequest& parsed) {
  check(parsed.status == 400, "a refused Responses body is a 400 (OpenAI's shape, not the 422 of the chat routes)");
  const json body = reparse(parsed.error_body, "the 400 body");
  check(body.is_object() && body.size() == 1 && body.contains("error") && body["error"].is_object(),
        "a 400 body is {\"error\": {...}}");
  const json& e = body["error"];
  check(e.value("message", json()).is_string() && !e["message"].get<std::string>().empty(), "the error has a message");
  check(e.value("type", json()) == "invalid_request_error", "the error is an invalid_request_error");
  check(e.contains("param") && string_or_null(e["param"]), "param is null or a string");
  check(e.contains("code") && string_or_null(e["code"]), "code is null or a string");
}

// The events of a stream, checked for shape and numbering; `first` is the
// sequence number the first must carry.
std::vector<json> check_events(std::string_view stream, int& next_sequence) {
  std::vector<json> events;
  size_t at = 0;
  while (at < stream.size()) {
    const size_t end = stream.find("\n\n", at);
    check(end != std::string_view::npos, "every event ends with a blank line");
    const std::string_view block = stream.substr(at, end - at);
    at = end + 2;
    check(block.rfind("event: ", 0) == 0, "an event starts with its name");
    const size_t newline = block.find('\n');
    check(newline != std::string_view::npos, "an event has a data line");
    const std::string name(block.substr(7, newline - 7));
    const std::string_view data_line = block.substr(newline + 1);
    check(data_line.rfind("data: ", 0) == 0 && data_line.find('\n') == std::string_view::npos,
          "one data line follows the name");
    json data;
    try {
      data = json::parse(data_line.substr(6));
    } catch (const json::exception&) {
      check(false, "an event's data is JSON");
    }
    check(data.is_object() && data.value("type", json()) == name, "an event's name is its data's type");
    check(data.value("sequence_number", json()) == next_sequence, "sequence_number counts 0, 1, 2, ... without a gap");
    ++next_sequence;
    events.push_back(std::move(data));
  }
  return events;
}

// Stored responses shared by every run, bounded (the formatters keep theirs,
// the least recently used going out): "resp_fuzz" a conversation of each item
// kind, kept afresh each run, for previous_response_id to continue.
std::shared_ptr<ResponseStore> fuzz_store() {
  static const auto store = std::make_shared<ResponseStore>(size_t(1) << 20);
  static const json conversation = json::parse(R"([
    {"type": "message", "role": "user", "content": "What is the weather?"},
    {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "Call the tool."}]},
    {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"},
    {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Sunny.", "annotations": []}]}])");
  store->put("resp_fuzz", {json{{"id", "resp_fuzz"}, {"object", "response"}}, conversation});
  return store;
}

void check_formatters(const std::string& text, bool cut, bool error) {
  ResponsesBuilder builder("fuzz-model", SamplingParams{});
  builder.set_response_store(fuzz_store());
  const bool utf8 = is_valid_utf8(text);
  ToolCall call{"call_fuzz", "f", text};
  CompletionResult result;
  result.text = text;
  result.reasoning = text;
  result.tool_calls = {call};
  result.reason = cut ? FinishReason::Length : FinishReason::Eos;
  result.prompt_tokens = 3;
  result.completion_tokens = 4;
  int sequence = 0;
  std::string stream = builder.format_stream_start(3);
  stream += builder.format_reasoning_chunk(0, text);
  stream += builder.format_chunk(0, text, nullptr);
  if (error) {
    stream += builder.format_stream_error(ErrorKind::Internal, text);
  } else {
    // The call as it streams: started, its arguments in two pieces, ended.
    ToolCall growing{call.id, call.name, ""};
    stream += builder.format_tool_call_start(0, 0, growing);
    for (const std::string& piece : {text.substr(0, text.size() / 2), text.substr(text.size() / 2)}) {
      growing.arguments += piece;
      stream += builder.format_tool_call_arguments(0, 0, growing, piece);
    }
    stream += builder.format_tool_call_end(0, 0, growing);
    stream += builder.format_choice_end(result);
    stream += builder.format_stream_end({result});
  }
  const std::vector<json> events = check_events(stream, sequence);
  check(events.size() >= 3 && events[0]["type"] == "response.created" && events[1]["type"] == "response.in_progress",
        "a stream opens with response.created, response.in_progress");
  const json& last = events.back();
  const std::string want = error ? "response.failed" : cut ? "response.incomplete" : "response.completed";
  check(last["type"] == want, "a stream ends with response.completed, .incomplete, or .failed after an error");
  if (utf8 && !error) {
    check(last["response"]["output_text"] == (text.empty() ? "" : text), "the streamed response's output_text is the text");
    bool call_found = false;
    for (const json& item : last["response"]["output"])
      if (item["type"] == "function_call") call_found = item["arguments"] == text;
    check(call_found, "the streamed response holds the call with its arguments");
  }
  const json whole = reparse(builder.format_response({result}), "the whole response");
  check(whole.is_object() && whole["object"] == "response", "the whole response is a response object");
  if (utf8) check(whole["output_text"] == text, "the whole response's output_text is the text");
}

}  // namespace

int fuzz_responses(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t text_length = std::min<size_t>(data[0], size - 1);
  const std::string text(reinterpret_cast<const char*>(data + 1), text_length);
  const std::string body(reinterpret_cast<const char*>(data + 1 + text_length), size - 1 - text_length);
  ResponsesBuilder builder("fuzz-model", SamplingParams{});
  builder.set_response_store(fuzz_store());
  ParsedChatRequest parsed;
  try {
    parsed = parse_chat_request(builder, body);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz property violated: parse_chat_request threw: %s\n", e.what());
    std::abort();
  }
  if (!parsed.ok()) {
    check_refusal(parsed);
  } else {
    const ChatRequest& r = *parsed.request;
    bool turn = false;
    for (const ChatMessage& m : r.messages) turn = turn || m.role != ChatRole::System;
    check(turn, "an accepted request has a turn besides its system turns");
    try {
      r.sampling.validate();
    } catch (const std::exception&) {
      check(false, "an accepted request's sampling parameters are valid");
    }
  }
  check_formatters(text, data[0] % 2 == 1, data[0] % 3 == 0);
  return 0;
}

}  // namespace astrai::fuzz

ASTRAI_FUZZ_ENTRY(fuzz_responses)
