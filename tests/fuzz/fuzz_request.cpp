// Fuzz target: what the server does with a chat request before the engine
// sees it, for both protocols: the API-key check on any header values, the
// choice of error shape for any path, the body's parsing and validation
// (parse_chat_request), and the rendering and formatting of whatever passes.
//
// Input layout (easy to write by hand; tests/fuzz/make_seeds.cpp writes the
// seeds):
//   byte 0: bit 0 the protocol (0 OpenAI, 1 Anthropic), bit 1 whether an
//           anthropic-version header is present;
//   then five strings, each [length byte][bytes]: the server's API key, the
//   Authorization header, the x-api-key header, the request path, and a piece
//   of "generated" text for the response formatters;
//   the rest is the request body.
//
// Properties (a failure aborts with "fuzz property violated: ..."):
//  1. api_key_matches equals a reimplementation of its documented rule, and
//     constant_time_equal equals ==; protocol_for_errors picks the route's
//     protocol, else Anthropic's when the version header is there, else OpenAI's.
//  2. parse_chat_request never throws. A rejection is a 422 whose body is
//     {"detail": [{loc: ["body", ...], msg, type}, ...]} (json_invalid also
//     has ctx), which json_text writes as JSON that parses back.
//  3. An accepted request holds what the body says (read here again, field
//     by field, with the protocol's rules) and is within the documented
//     bounds: messages non-empty with non-empty UTF-8 contents, max_tokens
//     >= 1, temperature finite and >= 0, top_p in (0, 1], top_k >= 0, stop
//     sequences non-empty UTF-8, and SamplingParams::validate() accepts it.
//  4. Every chat template renders its messages (each content, trimmed,
//     appears in the prompt) and a synthetic tokenizer encodes the prompt.
//  5. Every formatter of the request's builder writes JSON that parses back
//     to an object, or well-formed server-sent events whose every data line
//     is such JSON (OpenAI's last is [DONE]; Anthropic's event name is its
//     data's "type"); generated text that is valid UTF-8 comes back intact.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/chat/chat_template.h"
#include "engine/chat/prompt_encoder.h"
#include "engine/tokenizer/synthetic_tokenizer.h"
#include "server/http/api_key.h"
#include "server/protocols/chat_request_parser.h"
#include "server/protocols/protocols.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/written_json.h"

namespace astrai::fuzz {
namespace {

using json = nlohmann::ordered_json;

struct RequestCase {
  bool anthropic = false;
  bool has_anthropic_version = false;
  std::string api_key, authorization, x_api_key, path, text;
  std::string body;
};

RequestCase decode_request_case(const uint8_t* data, size_t size) {
  RequestCase c;
  size_t at = 0;
  auto next_string = [&] {
    const size_t length = at < size ? data[at++] : 0;
    const size_t n = std::min(length, size - at);
    std::string s(reinterpret_cast<const char*>(data + at), n);
    at += n;
    return s;
  };
  const uint8_t flags = size > 0 ? data[at++] : 0;
  c.anthropic = flags & 1;
  c.has_anthropic_version = flags & 2;
  c.api_key = next_string();
  c.authorization = next_string();
  c.x_api_key = next_string();
  c.path = next_string();
  c.text = next_string();
  c.body.assign(reinterpret_cast<const char*>(data + at), size - at);
  return c;
}

// --- 1. headers -------------------------------------------------------------

// The rule as api_key.h states it: "Authorization: Bearer KEY" with the
// scheme in any case and one space, or "x-api-key: KEY"; the key byte for byte.
bool reference_key_matches(std::string_view key, std::string_view authorization, std::string_view x_api_key) {
  bool bearer = authorization.size() >= 7 && authorization[6] == ' ';
  for (size_t i = 0; bearer && i < 6; ++i) {
    char ch = authorization[i];
    if (ch >= 'A' && ch <= 'Z') ch = char(ch - 'A' + 'a');
    bearer = ch == "bearer"[i];
  }
  return (bearer && authorization.substr(7) == key) || (!x_api_key.empty() && x_api_key == key);
}

void check_headers(const RequestCase& c) {
  check(api_key_matches(c.api_key, c.authorization, c.x_api_key) ==
            reference_key_matches(c.api_key, c.authorization, c.x_api_key),
        "api_key_matches follows the documented rule");
  check(constant_time_equal(c.api_key, c.x_api_key) == (c.api_key == c.x_api_key), "constant_time_equal is ==");
  check(constant_time_equal(c.api_key, c.api_key), "constant_time_equal(k, k)");

  const Protocol& chosen = protocol_for_errors(c.path, c.has_anthropic_version);
  const char* want = c.path == "/v1/chat/completions" ? "openai"
                     : c.path == "/v1/messages"       ? "anthropic"
                     : c.has_anthropic_version        ? "anthropic"
                                                      : "openai";
  check(chosen.name == want, "protocol_for_errors: the route's protocol, else by the anthropic-version header");
}

// --- 2. rejections ----------------------------------------------------------

bool non_empty_string(const json& v) { return v.is_string() && !v.get<std::string>().empty(); }

// The value at a JSON pointer ("/choices/0/delta/content"), or null when there is none.
json value_at(const json& v, const char* pointer) {
  const json::json_pointer p(pointer);
  return v.contains(p) ? v.at(p) : json();
}

void check_rejection(const ParsedChatRequest& parsed) {
  // A tool field the server cannot use (a malformed tool, tool_choice naming
  // no tool or of the wrong shape) is a 400 in the protocol's error shape,
  // naming the field (docs/tool-calling.md); any other refusal is a 422.
  if (parsed.status == 400) {
    const json body = reparse(parsed.error_body, "a 400 body");
    check(body.is_object() && body.contains("error") && body["error"].is_object(), "a 400 body has an error object");
    check(non_empty_string(body["error"].value("message", json())), "a 400 error has a message");
    check(body["error"].value("type", json()) == "invalid_request_error", "a 400 error is an invalid_request_error");
    return;
  }
  check(parsed.status == 422, "a rejected body gets 422 (or 400 for a tool field)");
  const json body = reparse(parsed.error_body, "a 422 body");
  check(body.is_object() && body.size() == 1 && body.contains("detail"), "a 422 body is {\"detail\": [...]}");
  const json& detail = body["detail"];
  check(detail.is_array() && !detail.empty(), "detail is a non-empty list");
  for (const json& e : detail) {
    check(e.is_object(), "each detail entry is an object");
    check(e.contains("loc") && e["loc"].is_array() && !e["loc"].empty() && e["loc"][0] == "body",
          "each detail entry's loc starts with \"body\"");
    for (const json& step : e["loc"]) check(step.is_string() || step.is_number_unsigned(), "loc steps are keys or indices");
    check(e.contains("msg") && non_empty_string(e["msg"]), "each detail entry has a msg");
    check(e.contains("type") && non_empty_string(e["type"]), "each detail entry has a type");
    if (e["type"] == "json_invalid") check(e.contains("ctx") && e["ctx"].is_object(), "json_invalid has a ctx");
  }
}

// --- 3. accepted requests ---------------------------------------------------

// A field as the validators read it: absent and null are the same.
const json* given(const json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

// Message content as both protocols allow it: a string, or text blocks joined by "\n".
std::string content_text(const json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string text;
  for (const json& block : content) {
    if (!text.empty()) text += '\n';
    text += block.at("text").get<std::string>();
  }
  return text;
}

ChatRole role_named(const std::string& role) {
  if (role == "system" || role == "developer") return ChatRole::System;
  if (role == "assistant") return ChatRole::Assistant;
  check(role == "user", "an accepted message has a known role");
  return ChatRole::User;
}

// An integer field as given (integral floats count), or nullopt.
std::optional<double> number_of(const json* v) {
  if (!v) return std::nullopt;
  check(v->is_number(), "an accepted numeric field is a number");
  return v->get<double>();
}

// The float an accepted temperature or top_p (>= 0) is read as, by
// validation.h's rule: the nearest float, but never inf, and never 0 for a
// positive value.
float as_float(double x) {
  const double largest = std::numeric_limits<float>::max(), smallest = std::numeric_limits<float>::denorm_min();
  if (x > largest) return float(largest);
  if (x > 0 && x < smallest) return float(smallest);
  return float(x);
}

void check_count(const json* v, int got, int fallback, const char* property) {
  if (const auto n = number_of(v)) {
    // Counts beyond int are clamped; below that they are taken as given.
    if (*n <= double(1 << 30))
      check(double(got) == *n, property);
    else
      check(got >= (1 << 30), property);
  } else {
    check(got == fallback, property);
  }
}

// The request holds what the body says, read again here with each protocol's rules.
void check_matches_body(const ChatRequest& r, const json& body, bool anthropic) {
  std::vector<ChatMessage> want;
  if (anthropic)
    if (const json* system = given(body, "system")) want.push_back({ChatRole::System, content_text(*system)});
  for (const json& m : body.at("messages")) {
    const ChatRole role = role_named(m.at("role").get<std::string>());
    if (anthropic) check(role != ChatRole::System, "Anthropic messages are user or assistant");
    want.push_back({role, content_text(m.at("content"))});
  }
  check(r.messages.size() == want.size(), "one message per body message (and Anthropic's system)");
  for (size_t i = 0; i < want.size(); ++i) {
    check(r.messages[i].role == want[i].role, "each message keeps its role");
    check(r.messages[i].content == want[i].content, "each message keeps its content");
  }

  const json* max_tokens = given(body, "max_tokens");
  if (!anthropic && given(body, "max_completion_tokens")) max_tokens = given(body, "max_completion_tokens");
  // Anthropic requires max_tokens; OpenAI's omitted means "what the context
  // leaves" (nullopt here, filled in by the handler).
  if (anthropic) check(max_tokens != nullptr, "Anthropic accepts a request only with max_tokens");
  check(r.max_tokens.has_value() == (max_tokens != nullptr), "max_tokens is set exactly when given");
  if (max_tokens && r.max_tokens)
    check_count(max_tokens, *r.max_tokens, 0, "max_tokens as given (max_completion_tokens first)");
  check_count(given(body, "top_k"), r.sampling.top_k, SamplingParams{}.top_k, "top_k as given");
  const auto temperature = number_of(given(body, "temperature"));
  check(r.sampling.temperature == (temperature ? as_float(*temperature) : SamplingParams{}.temperature),
        "temperature as given");
  const auto top_p = number_of(given(body, "top_p"));
  check(r.sampling.top_p == (top_p ? as_float(*top_p) : SamplingParams{}.top_p), "top_p as given");
  check(r.sampling.seed.has_value() == (given(body, "seed") != nullptr), "a seed iff one is given");
  const json* stream = given(body, "stream");
  check(r.stream == (stream && *stream == true), "stream as given");
  const json* ignore_eos = given(body, "ignore_eos");
  check(r.ignore_eos == (ignore_eos && *ignore_eos == true), "ignore_eos as given");

  std::vector<std::string> stops;
  if (const json* stop = given(body, anthropic ? "stop_sequences" : "stop")) {
    if (stop->is_string()) {
      check(!anthropic, "only OpenAI's stop may be a single string");
      stops.push_back(stop->get<std::string>());
    } else {
      for (const json& s : *stop) stops.push_back(s.get<std::string>());
    }
  }
  check(r.stop == stops, "stop sequences as given");
}

void check_bounds(const ChatRequest& r, bool anthropic) {
  check(!r.messages.empty(), "an accepted request has messages");
  for (size_t i = 0; i < r.messages.size(); ++i) {
    check(!r.messages[i].content.empty(), "every message has content");
    check(is_valid_utf8(r.messages[i].content), "every message's content is UTF-8");
    if (anthropic && r.messages[i].role == ChatRole::System) check(i == 0, "Anthropic's system prompt comes first");
  }
  check(r.max_tokens.value_or(1) >= 1, "max_tokens >= 1");
  check(r.n >= 1 && (!anthropic || r.n == 1), "n >= 1 (Anthropic has none)");
  check(std::isfinite(r.sampling.temperature) && r.sampling.temperature >= 0, "temperature is finite and >= 0");
  check(r.sampling.top_p > 0 && r.sampling.top_p <= 1, "top_p is in (0, 1]");
  check(r.sampling.top_k >= 0, "top_k >= 0");
  for (const auto& stop : r.stop) check(!stop.empty() && is_valid_utf8(stop), "stop sequences are non-empty UTF-8");
  try {
    r.sampling.validate();
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "fuzz property violated: the engine rejects accepted sampling parameters: %s\n", e.what());
    std::abort();
  }
}

// --- 4. templates and tokenizer ---------------------------------------------

// A synthetic vocabulary plus the chat markers as control pieces, so that
// the encoder's special-token path runs too.
const Tokenizer& chat_vocabulary() {
  static const Tokenizer tokenizer = [] {
    const Tokenizer base = make_synthetic_tokenizer(400);
    std::vector<std::string> pieces = base.pieces();
    std::vector<float> scores = base.scores();
    std::vector<TokenType> types = base.types();
    for (const char* marker : {"<|im_start|>", "<|im_end|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"}) {
      pieces.emplace_back(marker);
      scores.push_back(0.0f);
      types.push_back(TokenType::Control);
    }
    return Tokenizer(std::move(pieces), std::move(scores), std::move(types), 1, 2, 0);
  }();
  return tokenizer;
}

std::string trimmed(const std::string& s) {
  const char* space = " \t\n\r\f\v";
  const size_t first = s.find_first_not_of(space);
  return first == std::string::npos ? "" : s.substr(first, s.find_last_not_of(space) - first + 1);
}

// Renders with every template; returns the longest prompt's token count.
int check_templates(const std::vector<ChatMessage>& messages) {
  const Tokenizer& tok = chat_vocabulary();
  int most_tokens = 0;
  for (const std::string& name : chat_template_names()) {
    const Prompt prompt = make_chat_template(name)->render(messages);
    const std::string text = prompt_text(prompt);
    for (const ChatMessage& m : messages)
      check(text.find(trimmed(m.content)) != std::string::npos, "every content (trimmed) appears in the prompt");
    const std::vector<int> ids = encode_prompt(prompt, tok);
    check(!ids.empty() && ids.front() == tok.bos_id(), "an encoded prompt starts with BOS");
    for (const int id : ids) check(id >= 0 && id < tok.vocab_size(), "an encoded prompt's ids are in range");
    most_tokens = std::max(most_tokens, int(ids.size()));
  }
  return most_tokens;
}

// --- 5. formatters ----------------------------------------------------------

struct Event {
  std::optional<std::string> name;
  std::string data;
};

// Server-sent events as a client reads them: blocks ending in a blank line,
// each an optional "event: NAME" line and one "data: PAYLOAD" line.
std::vector<Event> read_events(std::string_view stream) {
  check(stream.find('\r') == std::string_view::npos, "an event stream has no carriage return");
  std::vector<Event> events;
  while (!stream.empty()) {
    const size_t end = stream.find("\n\n");
    check(end != std::string_view::npos, "every event ends with a blank line");
    std::string_view block = stream.substr(0, end);
    stream.remove_prefix(end + 2);
    Event event;
    if (block.starts_with("event: ")) {
      const size_t newline = block.find('\n');
      check(newline != std::string_view::npos, "an event line is followed by a data line");
      event.name = std::string(block.substr(7, newline - 7));
      block.remove_prefix(newline + 1);
    }
    check(block.starts_with("data: "), "every event has a data line");
    event.data = std::string(block.substr(6));
    check(event.data.find('\n') == std::string::npos, "an event's data is one line");
    events.push_back(std::move(event));
  }
  check(!events.empty(), "a formatter writes at least one event");
  return events;
}

// The events' data as JSON, checking the protocol's framing.
std::vector<json> check_events(std::string_view stream, bool anthropic, bool ends_with_done) {
  const std::vector<Event> events = read_events(stream);
  std::vector<json> payloads;
  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (!anthropic && e.data == "[DONE]") {
      check(ends_with_done && i + 1 == events.size(), "[DONE] comes only last, after an ending");
      continue;
    }
    json payload;
    try {
      payload = json::parse(e.data);
    } catch (const json::exception&) {
      check(false, "every event's data is JSON");
    }
    check(payload.is_object(), "every event's data is a JSON object");
    if (anthropic)
      check(e.name && payload.contains("type") && payload["type"] == *e.name, "an Anthropic event is named by its type");
    else
      check(!e.name, "OpenAI events have no name");
    payloads.push_back(std::move(payload));
  }
  if (!anthropic) check((events.back().data == "[DONE]") == ends_with_done, "an OpenAI stream's ending is [DONE]");
  return payloads;
}

void check_formatters(ResponseBuilder& builder, bool anthropic, const ChatRequest& request, const std::string& text,
                      int prompt_tokens) {
  const bool text_is_utf8 = is_valid_utf8(text);
  // The start opens each of the n choices; the engine refuses n above its
  // running places before a stream starts, so a huge n never gets here.
  if (request.n <= 64) check_events(builder.format_stream_start(prompt_tokens), anthropic, false);

  const std::vector<json> chunk = check_events(builder.format_chunk(0, text, nullptr), anthropic, false);
  check(chunk.size() == 1, "a chunk is one event");
  const json shown = value_at(chunk[0], anthropic ? "/delta/text" : "/choices/0/delta/content");
  check(shown.is_string() && is_valid_utf8(shown.get<std::string>()), "a chunk carries its text as a JSON string");
  if (text_is_utf8) check(shown == text, "a chunk carries UTF-8 text unchanged");

  CompletionResult result;
  result.text = text;
  result.stop_sequence = request.stop.empty() ? text : request.stop.front();
  result.prompt_tokens = prompt_tokens;
  // As the engine reports them: both counts fit the model's context (an
  // int), so their sum does too; max_tokens itself may be up to INT_MAX.
  result.completion_tokens = std::min(request.max_tokens.value_or(1 << 20), 1 << 20);
  for (const FinishReason reason :
       {FinishReason::Eos, FinishReason::Length, FinishReason::StopSequence, FinishReason::ContextLimit}) {
    result.reason = reason;
    check_events(builder.format_choice_end(result) + builder.format_stream_end({result}), anthropic, true);
    const json response = reparse(builder.format_response({result}), "a response");
    check(response.is_object(), "a response is a JSON object");
    const json content = value_at(response, anthropic ? "/content/0/text" : "/choices/0/message/content");
    check(content.is_string(), "a response carries its text as a JSON string");
    if (text_is_utf8) check(content == text, "a response carries UTF-8 text unchanged");
  }

  for (const ErrorKind kind : {ErrorKind::InvalidRequest, ErrorKind::ContextLength, ErrorKind::Authentication,
                               ErrorKind::Overloaded, ErrorKind::Unavailable, ErrorKind::Internal}) {
    const json error = reparse(builder.format_error(kind, text), "an error body");
    check(error.is_object() && value_at(error, "/error").is_object(), "an error body has an error object");
    if (text_is_utf8) check(value_at(error, "/error/message") == text, "an error body carries its message unchanged");
    check_events(builder.format_stream_error(kind, text), anthropic, true);
  }
}

void check_request(const RequestCase& c) {
  const Protocol& protocol = protocols()[c.anthropic ? 1 : 0];
  check(protocol.name == (c.anthropic ? "anthropic" : "openai"), "protocols() lists OpenAI, then Anthropic");
  const std::unique_ptr<ResponseBuilder> builder = protocol.make_builder("fuzz-model", SamplingParams{});
  ParsedChatRequest parsed;
  try {
    parsed = parse_chat_request(*builder, c.body);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz property violated: parse_chat_request threw: %s\n", e.what());
    std::abort();
  }
  if (!parsed.ok()) return check_rejection(parsed);

  check(parsed.error_body.is_null(), "an accepted request has no error body");
  const ChatRequest& r = *parsed.request;
  check_matches_body(r, json::parse(c.body), c.anthropic);
  check_bounds(r, c.anthropic);
  const int prompt_tokens = check_templates(r.messages);
  check_formatters(*builder, c.anthropic, r, c.text, prompt_tokens);
}

}  // namespace

int fuzz_request(const uint8_t* data, size_t size) {
  const RequestCase c = decode_request_case(data, size);
  check_headers(c);
  check_request(c);
  return 0;
}

}  // namespace astrai::fuzz

ASTRAI_FUZZ_ENTRY(fuzz_request)
