// OpenAI's legacy Completions shapes, field by field (vLLM's, where OpenAI's
// own has retired a field):
//   request:  prompt: string | [string] | [int] | [[int]] (required; each prompt runs as n choices),
//             max_tokens (default 16, as OpenAI and vLLM), temperature, top_p, top_k (extension), n, stop,
//             seed, stream, stream_options.include_usage, echo, logprobs (integer 0..20: the top
//             tokens per position), presence_penalty, frequency_penalty, logit_bias, and vLLM's
//             repetition_penalty, min_p, stop_token_ids, ignore_eos. suffix and best_of: 400, unsupported;
//             echo with logprobs: 400 (the engine does not score prompt tokens).
//   response: {id: cmpl-…, object: text_completion, created, model,
//              choices: [{index, text, logprobs: null | {tokens, token_logprobs, top_logprobs: [{token: logprob}],
//                         text_offset}, finish_reason: stop|length}],
//              usage: {prompt_tokens (every prompt once), completion_tokens, total_tokens,
//                      prompt_tokens_details: {cached_tokens}}}
//             choice index = prompt index * n + choice of that prompt.
//   stream:   chunks of the same shape with the new text (object text_completion), a last chunk per
//             choice with text "" and its finish_reason, the usage chunk (choices []) only with
//             stream_options.include_usage, then [DONE].
//   text_offset counts UTF-8 bytes of the choice's text before each token (vLLM counts characters).
#include "server/protocols/completions_response_builder.h"

#include <algorithm>
#include <map>

#include "engine/request_defaults.h"
#include "reference/sampling/logprobs.h"
#include "server/protocols/openai_response_builder.h"
#include "server/protocols/openai_sampling_fields.h"
#include "server/protocols/structured_output_fields.h"
#include "server/protocols/request_error.h"
#include "engine/chat_planning/request_id.h"
#include "server/http/sse.h"
#include "server/protocols/validation.h"

namespace astrai {

using json = nlohmann::ordered_json;

namespace {

const char* finish_reason_of(FinishReason reason) {
  switch (reason) {
    case FinishReason::Length:
    case FinishReason::ContextLimit: return "length";
    default: return "stop";
  }
}

// A list of token ids, or nullopt (recording why) when `value` is not one.
std::optional<std::vector<int>> read_ids(FieldChecker& check, const json& value, const json& loc) {
  std::vector<int> ids;
  bool ok = true;
  for (size_t i = 0; i < value.size(); ++i) {
    const auto id = check.integer(value[i], loc_append(loc, i));
    if (!id) { ok = false; continue; }
    if (*id < 0 || *id > (1LL << 30)) {
      check.add(loc_append(loc, i), "Input should be a token id (an integer >= 0)", "greater_than_equal");
      ok = false;
      continue;
    }
    ids.push_back(int(*id));
  }
  if (ids.empty() && ok) {
    check.add(loc, "A prompt of token ids needs at least 1 id", "too_short");
    ok = false;
  }
  if (!ok) return std::nullopt;
  return ids;
}

// prompt: a string, a list of strings, a list of ids, or a list of id lists.
void read_prompts(FieldChecker& check, const json& body, std::vector<RawPrompt>& out) {
  const json loc = json::array({"body", "prompt"});
  const json* prompt = check.field(body, json::array({"body"}), "prompt", true);
  if (!prompt) return;
  if (prompt->is_string()) {
    out.push_back({prompt->get<std::string>(), std::nullopt});
    return;
  }
  if (!check.is_array(*prompt, loc)) return;
  if (prompt->empty()) {
    check.add(loc, "List should have at least 1 item after validation, not 0", "too_short");
    return;
  }
  const json& first = prompt->front();
  if (first.is_number()) {  // one prompt of ids
    if (auto ids = read_ids(check, *prompt, loc)) out.push_back({"", std::move(*ids)});
    return;
  }
  for (size_t i = 0; i < prompt->size(); ++i) {
    const json& item = (*prompt)[i];
    const json item_loc = loc_append(loc, i);
    if (item.is_string() && first.is_string()) {
      out.push_back({item.get<std::string>(), std::nullopt});
    } else if (item.is_array() && first.is_array()) {
      if (auto ids = read_ids(check, item, item_loc)) out.push_back({"", std::move(*ids)});
    } else {
      check.add(item_loc, "Input should be like the first prompt: all strings, or all lists of token ids",
                "list_type");
    }
  }
}

}  // namespace

CompletionsResponseBuilder::CompletionsResponseBuilder(std::string model, SamplingParams defaults)
    : ResponseBuilder(defaults), model_(std::move(model)), id_(random_id("cmpl-")), created_(unix_time_now()) {}

void CompletionsResponseBuilder::read_input(FieldChecker& check, const json& body, ChatRequest& request) {
  for (const char* unsupported : {"suffix", "best_of"})
    if (body.contains(unsupported) && !body[unsupported].is_null())
      throw InvalidRequestError(std::string(unsupported) + " is not supported by this server");
  request.max_tokens = kCompletionsDefaultMaxTokens;  // unless the body sets it
  read_prompts(check, body, request.prompts);
}

void CompletionsResponseBuilder::read_fields(FieldChecker& check, const json& body, ChatRequest& request,
                                             CommonParameters&) {
  const json loc = json::array({"body"});
  if (const json* v = check.field(body, loc, "stop"))
    read_stop_sequences(check, *v, loc_append(loc, "stop"), true, request.stop);
  // logprobs is an integer here (a boolean in chat): read it apart.
  json sampling_fields = body;
  sampling_fields.erase("logprobs");
  sampling_fields.erase("top_logprobs");
  read_openai_sampling_fields(check, sampling_fields, request);
  read_structured_output_fields(check, body, request);  // response_format, structured_outputs, guided_*: as in chat
  if (const json* v = check.field(body, loc, "logprobs"))
    if (auto n = check.integer(*v, loc_append(loc, "logprobs"))) {
      check.at_least(double(*n), 0, loc_append(loc, "logprobs"));
      check.at_most(double(*n), kMaxTopLogprobs, loc_append(loc, "logprobs"));
      request.logprobs = int(std::clamp<long long>(*n, 0, kMaxTopLogprobs));
    }
  if (const json* v = check.field(body, loc, "echo"))
    if (auto b = check.boolean(*v, loc_append(loc, "echo"))) request.echo = *b;
  include_usage_ = read_choices_and_stream_options(check, body, request);
}

void CompletionsResponseBuilder::check_request(const json&, ChatRequest& request) {
  if (request.echo && request.logprobs >= 0)
    throw InvalidRequestError("echo with logprobs is not supported (the engine does not score prompt tokens)");
  n_ = request.n;
  text_offset_.assign(request.prompts.size() * size_t(request.n), 0);
}

json CompletionsResponseBuilder::legacy_logprobs(const json& entries, size_t offset) {
  json tokens = json::array(), token_logprobs = json::array(), top_logprobs = json::array(),
       text_offset = json::array();
  for (const json& entry : entries) {
    tokens.push_back(entry["token"]);
    token_logprobs.push_back(entry["logprob"]);
    json top = json::object();
    for (const json& t : entry["top_logprobs"]) top[t["token"].get<std::string>()] = t["logprob"];
    top_logprobs.push_back(std::move(top));
    text_offset.push_back(offset);
    offset += entry["bytes"].size();
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(token_logprobs)},
          {"top_logprobs", std::move(top_logprobs)},
          {"text_offset", std::move(text_offset)}};
}

json CompletionsResponseBuilder::usage_of(const std::vector<CompletionResult>& choices) const {
  // Each prompt once (its first choice), the choices' tokens summed; a
  // prompt's cache hit is counted on the choice that computed it: the most
  // among its choices.
  int64_t prompt = 0, completion = 0, cached = 0;
  std::map<int, int64_t> cached_per_prompt;
  for (const CompletionResult& c : choices) {
    completion += c.completion_tokens;
    if (c.index % n_ == 0) prompt += c.prompt_tokens;
    int64_t& slot = cached_per_prompt[c.index / n_];
    slot = std::max<int64_t>(slot, c.cached_prompt_tokens);
  }
  for (const auto& [p, c] : cached_per_prompt) cached += c;
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion},
          {"prompt_tokens_details", openai_prompt_details(cached)}};
}

json CompletionsResponseBuilder::chunk(int index, std::string_view text, json logprobs, const json& finish_reason) const {
  json c = {{"id", id_},
            {"object", "text_completion"},
            {"created", created_},
            {"model", model_},
            {"choices", json::array({{{"index", index},
                                      {"text", std::string(text)},
                                      {"logprobs", std::move(logprobs)},
                                      {"finish_reason", finish_reason}}})}};
  if (include_usage_.value_or(false)) c["usage"] = nullptr;
  return c;
}

std::string CompletionsResponseBuilder::format_stream_start(int) { return ""; }

std::string CompletionsResponseBuilder::format_chunk(int index, std::string_view text, const json& logprobs_content) {
  json logprobs = nullptr;
  if (!logprobs_content.is_null()) {
    size_t& offset = text_offset_.at(size_t(index));
    logprobs = legacy_logprobs(logprobs_content, offset);
    for (const json& entry : logprobs_content) offset += entry["bytes"].size();
  }
  return sse_data(chunk(index, text, std::move(logprobs), nullptr));
}

std::string CompletionsResponseBuilder::format_choice_end(const CompletionResult& choice) {
  return sse_data(chunk(choice.index, "", nullptr, finish_reason_of(choice.reason)));
}

std::string CompletionsResponseBuilder::format_stream_end(const std::vector<CompletionResult>& choices) {
  std::string out;
  if (include_usage_.value_or(false)) {
    const json usage_chunk = {{"id", id_},       {"object", "text_completion"}, {"created", created_},
                              {"model", model_}, {"choices", json::array()},    {"usage", usage_of(choices)}};
    out += sse_data(usage_chunk);
  }
  return out + sse_data_literal("[DONE]");
}

json CompletionsResponseBuilder::format_response(const std::vector<CompletionResult>& choices) {
  json items = json::array();
  for (const CompletionResult& result : choices)
    items.push_back({{"index", result.index},
                     {"text", result.text},
                     {"logprobs", result.logprobs_content.is_null() ? json(nullptr)
                                                                    : legacy_logprobs(result.logprobs_content, 0)},
                     {"finish_reason", finish_reason_of(result.reason)}});
  return {{"id", id_},
          {"object", "text_completion"},
          {"created", created_},
          {"model", model_},
          {"choices", std::move(items)},
          {"usage", usage_of(choices)}};
}

json CompletionsResponseBuilder::format_error(ErrorKind kind, const std::string& message) const {
  return openai_error_body(kind, message);
}

std::string CompletionsResponseBuilder::format_stream_error(ErrorKind kind, const std::string& message) {
  return sse_data(format_error(kind, message)) + sse_data_literal("[DONE]");
}

}  // namespace astrai
