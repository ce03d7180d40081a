// Anthropic's shapes, field by field:
//   request:  messages [{role: user|assistant, content: string | [blocks: text, tool_use (assistant), thinking
//             (assistant: the template's reasoning), tool_result (user)]}], tools, tool_choice (tool_request.h),
//             system (string or [{type: text, text}]), max_tokens, temperature, top_p, top_k,
//             stop_sequences, stream, seed (extension)
//   response: {id: msg_…, type: message, role: assistant, model, content: [{type: thinking, thinking, signature: ""}
//              (a reasoning model's), {type: text, text}, {type: tool_use, id, name, input}...],
//              stop_reason: end_turn|max_tokens|stop_sequence|tool_use, stop_sequence, usage: {input_tokens, output_tokens,
//              cache_creation_input_tokens: 0, cache_read_input_tokens}} (input_tokens excludes the cache reads,
//              as Anthropic counts them; message_start's input_tokens is the whole prompt, known before the hit)
//   stream:   event/data pairs message_start, then per block content_block_start, content_block_delta
//             (thinking_delta, text_delta or input_json_delta)…, content_block_stop; message_delta (stop_reason,
//             stop_sequence, usage), message_stop.
#include "server/protocols/anthropic_response_builder.h"

#include "engine/chat_planning/request_id.h"
#include "server/protocols/tool_messages.h"
#include "server/protocols/tool_request.h"
#include "server/http/sse.h"
#include "server/protocols/validation.h"

namespace astrai {

using json = nlohmann::ordered_json;

namespace {

const char* anthropic_stop_reason(const CompletionResult& r) {
  const FinishReason reason = r.reason;
  if (!r.tool_calls.empty() && reason != FinishReason::Length && reason != FinishReason::ContextLimit) return "tool_use";
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

// thinking (when the model reasoned), text (when there is some, or nothing
// else), one tool_use per call with its arguments as an object ({} for a
// call whose arguments max_tokens cut: its stream sent the text written).
json content_blocks(const CompletionResult& r) {
  json blocks = json::array();
  if (!r.reasoning.empty()) blocks.push_back({{"type", "thinking"}, {"thinking", r.reasoning}, {"signature", ""}});
  if (!r.text.empty() || r.tool_calls.empty()) blocks.push_back({{"type", "text"}, {"text", r.text}});
  for (const ToolCall& call : r.tool_calls) {
    json input = json::parse(call.arguments, nullptr, false);
    if (!input.is_object()) input = json::object();
    blocks.push_back({{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", std::move(input)}});
  }
  return blocks;
}

json stop_sequence_of(const CompletionResult& r) {
  if (r.reason == FinishReason::StopSequence) return r.stop_sequence;
  return nullptr;
}

void read_anthropic_messages(FieldChecker& check, const json& body, ChatRequest& request) {
  const json body_loc = json::array({"body"});
  if (const json* system = check.field(body, body_loc, "system"))
    if (auto text = read_text_content(check, *system, loc_append(body_loc, "system")))
      request.messages.push_back({ChatRole::System, std::move(*text)});
  read_object_list(check, body, body_loc, "messages", [&](const json& item, const json& item_loc) {
    std::optional<ChatRole> role;
    if (const json* r = check.field(item, item_loc, "role", true)) {
      auto name = check.string(*r, loc_append(item_loc, "role"));
      if (name && *name == "user") role = ChatRole::User;
      else if (name && *name == "assistant") role = ChatRole::Assistant;
      else if (name) check.add(loc_append(item_loc, "role"), "Input should be 'user' or 'assistant'", "literal_error");
    }
    const json* content = check.field(item, item_loc, "content", true);
    if (role && content) read_anthropic_turn(check, *content, loc_append(item_loc, "content"), *role, request.messages);
  });
}

}  // namespace

AnthropicResponseBuilder::AnthropicResponseBuilder(std::string model, SamplingParams defaults)
    : ResponseBuilder(defaults), model_(std::move(model)), id_(random_id("msg_")) {}

void AnthropicResponseBuilder::read_input(FieldChecker& check, const json& body, ChatRequest& request) {
  read_anthropic_messages(check, body, request);
}

void AnthropicResponseBuilder::read_fields(FieldChecker& check, const json& body, ChatRequest& request,
                                           CommonParameters&) {
  const json loc = json::array({"body"});
  // Anthropic's Messages API requires max_tokens (read with the common parameters).
  check.field(body, loc, "max_tokens", true);
  if (const json* v = check.field(body, loc, "stop_sequences"))
    read_stop_sequences(check, *v, loc_append(loc, "stop_sequences"), false, request.stop);
}

void AnthropicResponseBuilder::check_request(const json& body, ChatRequest& request) {
  read_anthropic_tools(body, request);
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
  std::string out = sse_event("message_start", {{"type", "message_start"}, {"message", message}});
  if (!lazy_blocks_) out += open_block({{"type", "text"}, {"text", ""}});
  return out;
}

std::string AnthropicResponseBuilder::close_block() {
  if (block_type_.empty()) return "";
  block_type_.clear();
  return sse_event("content_block_stop", {{"type", "content_block_stop"}, {"index", block_index_}});
}

std::string AnthropicResponseBuilder::open_block(const json& content_block) {
  const std::string type = content_block["type"];
  if (type == block_type_ && type != "tool_use") return "";
  std::string out = close_block();
  block_type_ = type;
  ++block_index_;
  return out + sse_event("content_block_start",
                         {{"type", "content_block_start"}, {"index", block_index_}, {"content_block", content_block}});
}

// Messages has no n and no logprobs: a request is choice 0.
std::string AnthropicResponseBuilder::format_chunk(int, std::string_view text, const json&) {
  if (text.empty() && lazy_blocks_) return "";
  std::string out = open_block({{"type", "text"}, {"text", ""}});  // first: it sets block_index_
  return out + sse_event("content_block_delta", {{"type", "content_block_delta"},
                                           {"index", block_index_},
                                           {"delta", {{"type", "text_delta"}, {"text", std::string(text)}}}});
}

std::string AnthropicResponseBuilder::format_reasoning_chunk(int, std::string_view text) {
  if (text.empty()) return "";
  // No signature: this server signs nothing (an empty one, for the SDKs' types).
  std::string out = open_block({{"type", "thinking"}, {"thinking", ""}, {"signature", ""}});
  return out + sse_event("content_block_delta", {{"type", "content_block_delta"},
                                           {"index", block_index_},
                                           {"delta", {{"type", "thinking_delta"}, {"thinking", std::string(text)}}}});
}

std::string AnthropicResponseBuilder::format_tool_call_start(int, int, const ToolCall& call) {
  return open_block({{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", json::object()}});
}

std::string AnthropicResponseBuilder::format_tool_call_arguments(int, int, const ToolCall&, std::string_view piece) {
  return sse_event("content_block_delta",
                   {{"type", "content_block_delta"},
                    {"index", block_index_},
                    {"delta", {{"type", "input_json_delta"}, {"partial_json", std::string(piece)}}}});
}

std::string AnthropicResponseBuilder::format_choice_end(const CompletionResult&) {
  return "";  // message_delta, in format_stream_end, carries the stop reason
}

std::string AnthropicResponseBuilder::format_stream_end(const std::vector<CompletionResult>& choices) {
  const CompletionResult& result = choices.at(0);
  const json delta = {{"stop_reason", anthropic_stop_reason(result)}, {"stop_sequence", stop_sequence_of(result)}};
  std::string out;
  if (block_index_ < 0) out += open_block({{"type", "text"}, {"text", ""}});  // nothing came: one empty text block
  out += close_block();
  return out +
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
          {"content", content_blocks(result)},
          {"stop_reason", anthropic_stop_reason(result)},
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
