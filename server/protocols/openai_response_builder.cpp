// OpenAI's shapes, field by field:
//   request:  messages [{role: system|developer|user|assistant|tool, content: string | [{type: text, text}]
//             (null for an assistant turn with tool_calls), tool_calls and reasoning_content | reasoning
//             (assistant), tool_call_id (tool)}], tools, tool_choice, parallel_tool_calls,
//             chat_template_kwargs, reasoning_effort (a template variable; tool_request.h),
//             max_tokens | max_completion_tokens, temperature, top_p, top_k (extension), seed,
//             stop (string or list), stream, stream_options.include_usage, n (>= 1; the engine bounds it),
//             presence_penalty, frequency_penalty, logit_bias, logprobs, top_logprobs, and vLLM's
//             repetition_penalty, min_p, stop_token_ids, ignore_eos (openai_sampling_fields.h)
//   response: {id: chatcmpl-…, object: chat.completion, created, model,
//              choices: [{index: 0 .. n-1, message: {role: assistant, content (null when only tools were
//                         called), reasoning_content and reasoning (when the model reasoned), tool_calls: [{id,
//                         type: function, function: {name, arguments: JSON text}}] (when it called tools)},
//                         logprobs: null | {content: [
//                         {token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}]}, finish_reason: stop|length}],
//              usage: {prompt_tokens, completion_tokens, total_tokens}}
//   stream:   chunks {id, object: chat.completion.chunk, created, model, choices: [{index, delta, finish_reason}]}:
//             per choice (its index): delta {role: assistant} (all n first), then {reasoning_content, reasoning}s,
//             {content}s and {tool_calls: [{index, id, type, function: {name, arguments: ""}}]} followed by
//             {tool_calls: [{index, function: {arguments}}]} per call, then {} with
//             the finish_reason, choices interleaved as their tokens come; then (only with
//             stream_options.include_usage true) a chunk with choices [] and the usage, then [DONE].
//   usage:    the prompt once, the choices' completion tokens summed (as OpenAI and vLLM count n);
//             prompt_tokens_details.cached_tokens: prompt tokens a prefix-cache hit served.
#include "server/protocols/openai_response_builder.h"

#include <algorithm>

#include "server/protocols/openai_sampling_fields.h"
#include "server/protocols/structured_output_fields.h"
#include "server/protocols/tool_messages.h"
#include "server/protocols/tool_request.h"
#include "engine/chat_planning/request_id.h"
#include "server/http/sse.h"
#include "server/protocols/validation.h"

namespace astrai {

using json = nlohmann::ordered_json;

namespace {

// A choice that called tools and was not cut short ends with "tool_calls".
const char* openai_finish_reason(const CompletionResult& choice) {
  const FinishReason reason = choice.reason;
  if (!choice.tool_calls.empty() && reason != FinishReason::Length && reason != FinishReason::ContextLimit)
    return "tool_calls";
  switch (reason) {
    case FinishReason::Eos:
    case FinishReason::StopSequence: return "stop";
    case FinishReason::Length:
    case FinishReason::ContextLimit: return "length";
    default: return "stop";  // Cancelled/Error never reach a normal ending
  }
}

json usage_of(const std::vector<CompletionResult>& choices) {
  // Every choice reports the whole prompt, which was computed once.
  // The prefix-cache hit is counted on the choice that computed the prompt.
  const int64_t prompt = choices.at(0).prompt_tokens;
  int64_t completion = 0, cached = 0, reasoning = 0;
  for (const CompletionResult& c : choices) {
    completion += c.completion_tokens;
    reasoning += c.reasoning_tokens;
    cached = std::max<int64_t>(cached, c.cached_prompt_tokens);
  }
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion},
          {"prompt_tokens_details", openai_prompt_details(cached)},
          {"completion_tokens_details", {{"reasoning_tokens", reasoning}}}};
}

std::optional<ChatRole> openai_role(const std::string& role) {
  if (role == "system" || role == "developer") return ChatRole::System;
  if (role == "user") return ChatRole::User;
  if (role == "assistant") return ChatRole::Assistant;
  if (role == "tool") return ChatRole::Tool;
  return std::nullopt;
}

void read_openai_messages(FieldChecker& check, const json& body, ChatRequest& request) {
  read_object_list(check, body, json::array({"body"}), "messages", [&](const json& item, const json& item_loc) {
    ChatMessage message;
    bool ok = true;
    if (const json* role = check.field(item, item_loc, "role", true)) {
      auto name = check.string(*role, loc_append(item_loc, "role"));
      auto parsed = name ? openai_role(*name) : std::nullopt;
      if (name && !parsed)
        check.add(loc_append(item_loc, "role"), "Input should be 'system', 'developer', 'user', 'assistant' or 'tool'",
                  "literal_error");
      if (parsed) message.role = *parsed; else ok = false;
    } else {
      ok = false;
    }
    // An assistant turn that calls tools may have no content (null).
    const json* calls = ok && message.role == ChatRole::Assistant ? check.field(item, item_loc, "tool_calls") : nullptr;
    if (calls) {
      if (auto read = read_openai_tool_calls(check, *calls, loc_append(item_loc, "tool_calls"))) {
        if (!read->empty()) message.tool_calls = std::move(*read);
      } else {
        ok = false;
      }
    }
    // Its reasoning, as the response gave it (reasoning_content, or vLLM's newer name).
    if (ok && message.role == ChatRole::Assistant)
      for (const char* key : {"reasoning_content", "reasoning"})
        if (const json* r = check.field(item, item_loc, key); r && !r->is_null() && message.reasoning.empty())
          if (auto s = check.string(*r, loc_append(item_loc, key))) message.reasoning = *s;
    if (ok && message.role == ChatRole::Tool) {
      if (const json* id = check.field(item, item_loc, "tool_call_id"))
        if (auto s = check.string(*id, loc_append(item_loc, "tool_call_id"))) message.tool_call_id = *s;
      if (const json* name = check.field(item, item_loc, "name"))
        if (auto s = check.string(*name, loc_append(item_loc, "name"))) message.name = *s;
    }
    std::optional<std::string> content;
    if (const json* c = check.field(item, item_loc, "content", message.tool_calls.is_null()))
      content = read_text_content(check, *c, loc_append(item_loc, "content"));
    else if (!message.tool_calls.is_null())
      content = "";  // null beside tool_calls: the template gets "" (chat_message.h)
    if (ok && content) {
      message.content = std::move(*content);
      request.messages.push_back(std::move(message));
    }
  });
}
}  // namespace

OpenAIResponseBuilder::OpenAIResponseBuilder(std::string model, SamplingParams defaults)
    : ResponseBuilder(defaults), model_(std::move(model)), id_(random_id("chatcmpl-")), created_(unix_time_now()) {}

void OpenAIResponseBuilder::read_input(FieldChecker& check, const json& body, ChatRequest& request) {
  read_openai_messages(check, body, request);
}

void OpenAIResponseBuilder::read_fields(FieldChecker& check, const json& body, ChatRequest& request,
                                        CommonParameters& common) {
  const json loc = json::array({"body"});
  // max_completion_tokens is the newer name of max_tokens; it wins when both are given.
  if (const json* v = check.field(body, loc, "max_completion_tokens"))
    if (auto n = check.integer(*v, loc_append(loc, "max_completion_tokens"))) {
      check.at_least(double(*n), 1, loc_append(loc, "max_completion_tokens"));
      common.max_tokens = int(std::min<long long>(*n, 1 << 30));
    }
  if (const json* v = check.field(body, loc, "stop"))
    read_stop_sequences(check, *v, loc_append(loc, "stop"), true, request.stop);
  read_openai_sampling_fields(check, body, request);
  read_structured_output_fields(check, body, request);
  include_usage_ = read_choices_and_stream_options(check, body, request);
}

void OpenAIResponseBuilder::check_request(const json& body, ChatRequest& request) {
  read_openai_tools(body, request);
  n_ = request.n;
}

json OpenAIResponseBuilder::chunk(int index, json delta, const json& finish_reason) const {
  json c = {{"id", id_},
            {"object", "chat.completion.chunk"},
            {"created", created_},
            {"model", model_},
            {"choices", json::array({{{"index", index}, {"delta", std::move(delta)}, {"finish_reason", finish_reason}}})}};
  if (include_usage_.value_or(false)) c["usage"] = nullptr;
  return c;
}

std::string OpenAIResponseBuilder::format_stream_start(int) {
  // OpenAI opens every choice with its role before any content.
  std::string out;
  for (int i = 0; i < n_; ++i) out += sse_data(chunk(i, {{"role", "assistant"}}, nullptr));
  return out;
}

std::string OpenAIResponseBuilder::format_chunk(int index, std::string_view text, const json& logprobs_content) {
  json c = chunk(index, {{"content", std::string(text)}}, nullptr);
  if (!logprobs_content.is_null()) c["choices"][0]["logprobs"] = {{"content", logprobs_content}};
  return sse_data(c);
}

std::string OpenAIResponseBuilder::format_choice_end(const CompletionResult& choice) {
  return sse_data(chunk(choice.index, json::object(), openai_finish_reason(choice)));
}

std::string OpenAIResponseBuilder::format_stream_end(const std::vector<CompletionResult>& choices) {
  std::string out;
  // Only when asked, as OpenAI does: the usage chunk's choices are empty,
  // and clients that read choices[0] of every chunk would fail on it.
  if (include_usage_.value_or(false)) {
    const json usage_chunk = {{"id", id_},         {"object", "chat.completion.chunk"}, {"created", created_},
                              {"model", model_},   {"choices", json::array()},          {"usage", usage_of(choices)}};
    out += sse_data(usage_chunk);
  }
  return out + sse_data_literal("[DONE]");
}

std::string OpenAIResponseBuilder::format_reasoning_chunk(int index, std::string_view text) {
  if (text.empty()) return "";
  // reasoning_content (DeepSeek's and vLLM's name) and reasoning (vLLM's newer one).
  return sse_data(chunk(index, {{"reasoning_content", std::string(text)}, {"reasoning", std::string(text)}}, nullptr));
}

std::string OpenAIResponseBuilder::format_tool_call_start(int index, int call_index, const ToolCall& call) {
  // As OpenAI streams a call: its id, type and name first, then the arguments.
  const json head = {{"tool_calls", json::array({{{"index", call_index},
                                                  {"id", call.id},
                                                  {"type", "function"},
                                                  {"function", {{"name", call.name}, {"arguments", ""}}}}})}};
  return sse_data(chunk(index, head, nullptr));
}

std::string OpenAIResponseBuilder::format_tool_call_arguments(int index, int call_index, const ToolCall&,
                                                              std::string_view piece) {
  const json arguments = {
      {"tool_calls", json::array({{{"index", call_index}, {"function", {{"arguments", std::string(piece)}}}}})}};
  return sse_data(chunk(index, arguments, nullptr));
}

json openai_message(const CompletionResult& result) {
  json message = {{"role", "assistant"}};
  // A message that only calls tools has no content (null), as OpenAI's.
  message["content"] = result.text.empty() && !result.tool_calls.empty() ? json(nullptr) : json(result.text);
  if (!result.reasoning.empty()) {
    message["reasoning_content"] = result.reasoning;
    message["reasoning"] = result.reasoning;
  }
  if (!result.tool_calls.empty()) {
    json calls = json::array();
    for (const ToolCall& call : result.tool_calls)
      calls.push_back({{"id", call.id}, {"type", "function"}, {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
    message["tool_calls"] = std::move(calls);
  }
  return message;
}

json OpenAIResponseBuilder::format_response(const std::vector<CompletionResult>& choices) {
  json items = json::array();
  for (const CompletionResult& result : choices)
    items.push_back({{"index", result.index},
                     {"message", openai_message(result)},
                     {"logprobs", result.logprobs_content.is_null() ? json(nullptr)
                                                                    : json{{"content", result.logprobs_content}}},
                     {"finish_reason", openai_finish_reason(result)}});
  return {{"id", id_},
          {"object", "chat.completion"},
          {"created", created_},
          {"model", model_},
          {"choices", std::move(items)},
          {"usage", usage_of(choices)}};
}

json OpenAIResponseBuilder::format_error(ErrorKind kind, const std::string& message) const {
  return openai_error_body(kind, message);
}

json openai_prompt_details(int64_t cached_tokens) { return {{"cached_tokens", cached_tokens}}; }

json openai_error_body(ErrorKind kind, const std::string& message) {
  const char* type = "invalid_request_error";
  json code = nullptr;
  switch (kind) {
    case ErrorKind::InvalidRequest: break;
    case ErrorKind::ContextLength: code = "context_length_exceeded"; break;
    case ErrorKind::Authentication: code = "invalid_api_key"; break;
    case ErrorKind::Overloaded: type = "server_error"; code = "server_overloaded"; break;
    case ErrorKind::Unavailable: type = "server_error"; code = "service_unavailable"; break;
    case ErrorKind::Internal: type = "server_error"; break;
  }
  return {{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", code}}}};
}

std::string OpenAIResponseBuilder::format_stream_error(ErrorKind kind, const std::string& message) {
  // OpenAI's streams report a late failure as a data event carrying an error object.
  return sse_data(format_error(kind, message)) + sse_data_literal("[DONE]");
}

}  // namespace astrai
