// Anthropic's shapes, field by field:
//   request:  messages [{role: user|assistant, content: string | [{type: text, text}]}],
//             system (string or [{type: text, text}]), max_tokens, temperature, top_p, top_k,
//             stop_sequences, stream, seed (extension)
//   response: {id: msg_…, type: message, role: assistant, model, content: [{type: text, text}],
//              stop_reason: end_turn|max_tokens|stop_sequence, stop_sequence, usage: {input_tokens, output_tokens,
//              cache_creation_input_tokens: 0, cache_read_input_tokens}} (input_tokens excludes the cache reads,
//              as Anthropic counts them; message_start's input_tokens is the whole prompt, known before the hit)
//   stream:   event/data pairs message_start, content_block_start, content_block_delta (text_delta)…,
//             content_block_stop, message_delta (stop_reason, stop_sequence, usage), message_stop.
#include "server/anthropic_response_builder.h"

#include "server/request_id.h"
#include "server/sse.h"
#include "server/validation.h"

namespace astrai {

using json = nlohmann::ordered_json;

namespace {

const char* anthropic_stop_reason(FinishReason reason) {
  switch (reason) {
    case FinishReason::StopSequence: return "stop_sequence";
    case FinishReason::Length:
    case FinishReason::ContextLimit: return "max_tokens";
    default: return "end_turn";
  }
}

// Anthropic counts cache reads apart: input_tokens + cache_read_input_tokens
// is the whole prompt (no cache writes are billed here: 0).
json usage_of(const CompletionResult& r) {
  return {{"input_tokens", r.prompt_tokens - r.cached_prompt_tokens},
          {"output_tokens", r.completion_tokens},
          {"cache_creation_input_tokens", 0},
          {"cache_read_input_tokens", r.cached_prompt_tokens}};
}

json stop_sequence_of(const CompletionResult& r) {
  if (r.reason == FinishReason::StopSequence) return r.stop_sequence;
  return nullptr;
}

void read_messages(FieldChecker& check, const json& body, ChatRequest& request) {
  const json body_loc = json::array({"body"});
  if (const json* system = check.field(body, body_loc, "system"))
    if (auto text = read_text_content(check, *system, loc_append(body_loc, "system")))
      request.messages.push_back({ChatRole::System, std::move(*text)});
  const json loc = loc_append(body_loc, "messages");
  const json* messages = check.field(body, body_loc, "messages", true);
  if (!messages || !check.is_array(*messages, loc)) return;
  if (messages->empty()) check.add(loc, "List should have at least 1 item after validation, not 0", "too_short");
  for (size_t i = 0; i < messages->size(); ++i) {
    const json item_loc = loc_append(loc, i);
    const json& item = (*messages)[i];
    if (!check.is_object(item, item_loc)) continue;
    std::optional<ChatRole> role;
    if (const json* r = check.field(item, item_loc, "role", true)) {
      auto name = check.string(*r, loc_append(item_loc, "role"));
      if (name && *name == "user") role = ChatRole::User;
      else if (name && *name == "assistant") role = ChatRole::Assistant;
      else if (name) check.add(loc_append(item_loc, "role"), "Input should be 'user' or 'assistant'", "literal_error");
    }
    std::optional<std::string> content;
    if (const json* c = check.field(item, item_loc, "content", true))
      content = read_text_content(check, *c, loc_append(item_loc, "content"));
    if (role && content) request.messages.push_back({*role, std::move(*content)});
  }
}

}  // namespace

AnthropicResponseBuilder::AnthropicResponseBuilder(std::string model, SamplingParams defaults)
    : model_(std::move(model)), default_sampling_(defaults), id_(random_id("msg_")) {}

ChatRequest AnthropicResponseBuilder::prepare(const json& body) {
  FieldChecker check;
  ChatRequest request;
  request.sampling = default_sampling_;
  read_messages(check, body, request);
  const CommonParameters p = read_common_parameters(check, body);
  const json loc = json::array({"body"});
  // Anthropic's Messages API requires max_tokens (read with the others above).
  check.field(body, loc, "max_tokens", true);
  if (const json* v = check.field(body, loc, "stop_sequences"))
    read_stop_sequences(check, *v, loc_append(loc, "stop_sequences"), false, request.stop);
  check.throw_if_any();
  apply_common_parameters(p, request);
  return request;
}

std::string AnthropicResponseBuilder::format_stream_start(int prompt_tokens) {
  const json message = {{"id", id_},
                        {"type", "message"},
                        {"role", "assistant"},
                        {"model", model_},
                        {"content", json::array()},
                        {"stop_reason", nullptr},
                        {"stop_sequence", nullptr},
                        {"usage", {{"input_tokens", prompt_tokens}, {"output_tokens", 0}}}};
  return sse_event("message_start", {{"type", "message_start"}, {"message", message}}) +
         sse_event("content_block_start", {{"type", "content_block_start"},
                                           {"index", 0},
                                           {"content_block", {{"type", "text"}, {"text", ""}}}});
}

// Messages has no n and no logprobs: a request is choice 0, and its
// content block is index 0 whatever the choice index says.
std::string AnthropicResponseBuilder::format_chunk(int, std::string_view text, const json&) {
  return sse_event("content_block_delta", {{"type", "content_block_delta"},
                                           {"index", 0},
                                           {"delta", {{"type", "text_delta"}, {"text", std::string(text)}}}});
}

std::string AnthropicResponseBuilder::format_choice_end(const CompletionResult&) {
  return "";  // message_delta, in format_stream_end, carries the stop reason
}

std::string AnthropicResponseBuilder::format_stream_end(const std::vector<CompletionResult>& choices) {
  const CompletionResult& result = choices.at(0);
  const json delta = {{"stop_reason", anthropic_stop_reason(result.reason)}, {"stop_sequence", stop_sequence_of(result)}};
  return sse_event("content_block_stop", {{"type", "content_block_stop"}, {"index", 0}}) +
         sse_event("message_delta", {{"type", "message_delta"},
                                     {"delta", delta},
                                     {"usage", usage_of(result)}}) +
         sse_event("message_stop", {{"type", "message_stop"}});
}

json AnthropicResponseBuilder::format_response(const std::vector<CompletionResult>& choices) {
  const CompletionResult& result = choices.at(0);
  return {{"id", id_},
          {"type", "message"},
          {"role", "assistant"},
          {"model", model_},
          {"content", json::array({{{"type", "text"}, {"text", result.text}}})},
          {"stop_reason", anthropic_stop_reason(result.reason)},
          {"stop_sequence", stop_sequence_of(result)},
          {"usage", usage_of(result)}};
}

json AnthropicResponseBuilder::format_error(ErrorKind kind, const std::string& message) const {
  const char* type = "invalid_request_error";
  switch (kind) {
    case ErrorKind::InvalidRequest:
    case ErrorKind::ContextLength: break;
    case ErrorKind::Authentication: type = "authentication_error"; break;
    case ErrorKind::Overloaded: type = "overloaded_error"; break;
    case ErrorKind::Unavailable:
    case ErrorKind::Internal: type = "api_error"; break;
  }
  return {{"type", "error"}, {"error", {{"type", type}, {"message", message}}}};
}

std::string AnthropicResponseBuilder::format_stream_error(ErrorKind kind, const std::string& message) {
  return sse_event("error", format_error(kind, message));
}

}  // namespace astrai
