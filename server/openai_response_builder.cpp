// OpenAI's shapes, field by field:
//   request:  messages [{role: system|developer|user|assistant, content: string | [{type: text, text}]}],
//             max_tokens | max_completion_tokens, temperature, top_p, top_k (extension), seed,
//             stop (string or list), stream, stream_options.include_usage, n (>= 1; the engine bounds it),
//             presence_penalty, frequency_penalty, logit_bias, logprobs, top_logprobs, and vLLM's
//             repetition_penalty, min_p, stop_token_ids, ignore_eos (openai_sampling_fields.h)
//   response: {id: chatcmpl-…, object: chat.completion, created, model,
//              choices: [{index: 0 .. n-1, message: {role: assistant, content}, logprobs: null | {content: [
//                         {token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}]}, finish_reason: stop|length}],
//              usage: {prompt_tokens, completion_tokens, total_tokens}}
//   stream:   chunks {id, object: chat.completion.chunk, created, model, choices: [{index, delta, finish_reason}]}:
//             per choice (its index): delta {role: assistant} (all n first), then {content}s, then {} with
//             the finish_reason, choices interleaved as their tokens come; then (only with
//             stream_options.include_usage true) a chunk with choices [] and the usage, then [DONE].
//   usage:    the prompt once, the choices' completion tokens summed (as OpenAI and vLLM count n);
//             prompt_tokens_details.cached_tokens: prompt tokens a prefix-cache hit served.
#include "server/openai_response_builder.h"

#include <algorithm>

#include "server/openai_sampling_fields.h"
#include "server/request_id.h"
#include "server/sse.h"
#include "server/validation.h"

namespace astrai {

using json = nlohmann::ordered_json;

namespace {

const char* openai_finish_reason(FinishReason reason) {
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
  int64_t completion = 0, cached = 0;
  for (const CompletionResult& c : choices) {
    completion += c.completion_tokens;
    cached = std::max<int64_t>(cached, c.cached_prompt_tokens);
  }
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion},
          {"prompt_tokens_details", openai_prompt_details(cached)}};
}

std::optional<ChatRole> openai_role(const std::string& role) {
  if (role == "system" || role == "developer") return ChatRole::System;
  if (role == "user") return ChatRole::User;
  if (role == "assistant") return ChatRole::Assistant;
  return std::nullopt;
}

void read_messages(FieldChecker& check, const json& body, ChatRequest& request) {
  const json loc = json::array({"body", "messages"});
  const json* messages = check.field(body, json::array({"body"}), "messages", true);
  if (!messages || !check.is_array(*messages, loc)) return;
  if (messages->empty()) check.add(loc, "List should have at least 1 item after validation, not 0", "too_short");
  for (size_t i = 0; i < messages->size(); ++i) {
    const json item_loc = loc_append(loc, i);
    const json& item = (*messages)[i];
    if (!check.is_object(item, item_loc)) continue;
    ChatMessage message;
    bool ok = true;
    if (const json* role = check.field(item, item_loc, "role", true)) {
      auto name = check.string(*role, loc_append(item_loc, "role"));
      auto parsed = name ? openai_role(*name) : std::nullopt;
      if (name && !parsed)
        check.add(loc_append(item_loc, "role"), "Input should be 'system', 'developer', 'user' or 'assistant'",
                  "literal_error");
      if (parsed) message.role = *parsed; else ok = false;
    } else {
      ok = false;
    }
    std::optional<std::string> content;
    if (const json* c = check.field(item, item_loc, "content", true))
      content = read_text_content(check, *c, loc_append(item_loc, "content"));
    if (ok && content) request.messages.push_back({message.role, std::move(*content)});
  }
}

}  // namespace

OpenAIResponseBuilder::OpenAIResponseBuilder(std::string model, SamplingParams defaults)
    : model_(std::move(model)), default_sampling_(defaults), id_(random_id("chatcmpl-")), created_(unix_time_now()) {}

ChatRequest OpenAIResponseBuilder::prepare(const json& body) {
  FieldChecker check;
  ChatRequest request;
  request.sampling = default_sampling_;
  read_messages(check, body, request);
  const CommonParameters p = read_common_parameters(check, body);
  const json loc = json::array({"body"});
  // max_completion_tokens is the newer name of max_tokens; it wins when both are given.
  std::optional<int> max_tokens = p.max_tokens;
  if (const json* v = check.field(body, loc, "max_completion_tokens"))
    if (auto n = check.integer(*v, loc_append(loc, "max_completion_tokens"))) {
      check.at_least(double(*n), 1, loc_append(loc, "max_completion_tokens"));
      max_tokens = int(std::min<long long>(*n, 1 << 30));
    }
  if (const json* v = check.field(body, loc, "stop"))
    read_stop_sequences(check, *v, loc_append(loc, "stop"), true, request.stop);
  read_openai_sampling_fields(check, body, request);
  // The upper bound is the server's --max-running (the n choices run
  // together), which the engine checks when the request is submitted.
  if (const json* v = check.field(body, loc, "n"))
    if (auto n = check.integer(*v, loc_append(loc, "n"))) {
      check.at_least(double(*n), 1, loc_append(loc, "n"));
      request.n = int(std::clamp<long long>(*n, 1, 1 << 30));
    }
  if (const json* options = check.field(body, loc, "stream_options");
      options && check.is_object(*options, loc_append(loc, "stream_options"))) {
    const json options_loc = loc_append(loc, "stream_options");
    if (const json* v = check.field(*options, options_loc, "include_usage"))
      include_usage_ = check.boolean(*v, loc_append(options_loc, "include_usage"));
  }
  check.throw_if_any();
  n_ = request.n;
  apply_common_parameters(p, request);
  if (max_tokens) request.max_tokens = *max_tokens;  // max_completion_tokens when given
  return request;
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
  return sse_data(chunk(choice.index, json::object(), openai_finish_reason(choice.reason)));
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

json OpenAIResponseBuilder::format_response(const std::vector<CompletionResult>& choices) {
  json items = json::array();
  for (const CompletionResult& result : choices)
    items.push_back({{"index", result.index},
                     {"message", {{"role", "assistant"}, {"content", result.text}}},
                     {"logprobs", result.logprobs_content.is_null() ? json(nullptr)
                                                                    : json{{"content", result.logprobs_content}}},
                     {"finish_reason", openai_finish_reason(result.reason)}});
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
