// OpenAI's Responses shapes, field by field (what this server reads and writes):
//   request:  input: string (one user message) | [items]; instructions (a system message first);
//             items: {type?: "message", role: user|assistant|system|developer,
//                     content: string | [{type: input_text|output_text|text, text}]},
//                    {type: "function_call", call_id, name, arguments} (an assistant turn's calls: consecutive
//                     calls, and calls right after an assistant message, are one turn),
//                    {type: "function_call_output", call_id, output: string | [{type: input_text, text}]},
//                    {type: "reasoning", summary: [{text}], content: [{text}]} (the next assistant turn's
//                     reasoning, as chat templates read it back);
//             max_output_tokens, temperature, top_p, stream, parallel_tool_calls,
//             tools: [{type: "function", name, description?, parameters?, strict?}] and Codex's
//             {type: "namespace", name, tools: [function tools]} (flattened: each function under its own
//             name); other tool types, which this server cannot run, are left out of the prompt,
//             tool_choice: "auto" | "none" | "required" | {type: "function", name},
//             text: {format: {type: text | json_object | json_schema (name, schema, strict, description)}},
//             reasoning: {effort: none|minimal|low|medium|high, summary} (effort: chat's reasoning_effort, a
//             thinking budget and the template variable (not none); minimal and none also turn
//             enable_thinking off),
//             previous_response_id (the stored conversation, response_store.h, then input; unknown: 400
//             previous_response_not_found), store (false: not kept; default true when the server keeps any),
//             metadata, user, prompt_cache_key, client_metadata, include, truncation, service_tier,
//             safety_identifier: accepted.
//   response: {id: resp_…, object: response, created_at, status: completed | incomplete,
//              incomplete_details: null | {reason: max_output_tokens}, error: null, model,
//              output: [{type: reasoning, id: rs_…, summary: [], content: [{type: reasoning_text, text}]},
//                       {type: message, id: msg_…, status, role: assistant,
//                        content: [{type: output_text, text, annotations: []}]},
//                       {type: function_call, id: fc_…, call_id, name, arguments, status}],
//              output_text, usage: {input_tokens, input_tokens_details: {cached_tokens}, output_tokens,
//              output_tokens_details: {reasoning_tokens}, total_tokens}, and the request's settings}
//   stream:   response.created, response.in_progress; per output item output_item.added, then for a
//             message content_part.added, output_text.delta…, output_text.done, content_part.done;
//             for reasoning content_part.added, reasoning_text.delta…, reasoning_text.done,
//             content_part.done (the reasoning_text part, as the SDKs accumulate it); for a call
//             function_call_arguments.delta, .done; then output_item.done; last response.completed (or
//             response.incomplete); every event with its type and an increasing sequence_number.
//   errors:   400 {error: {message, type: invalid_request_error, param: "input[0].content", code}}.
#include "server/protocols/responses_builder.h"

#include <algorithm>
#include <map>

#include "engine/chat_planning/request_id.h"
#include "server/http/sse.h"
#include "server/protocols/openai_response_builder.h"
#include "server/protocols/request_error.h"
#include "server/protocols/structured_output_fields.h"
#include "server/protocols/tool_messages.h"
#include "server/protocols/tool_request.h"
#include "server/protocols/validation.h"

namespace astrai {

using json = nlohmann::ordered_json;

namespace {

bool cut_short(const CompletionResult& c) {
  return c.reason == FinishReason::Length || c.reason == FinishReason::ContextLimit;
}

// "input[0].content" from ["body", "input", 0, "content"].
std::string param_of(const json& loc) {
  std::string out;
  for (size_t i = 1; i < loc.size(); ++i) {
    if (loc[i].is_number()) {
      out += '[';
      out += std::to_string(loc[i].get<long long>());
      out += ']';
    } else {
      if (!out.empty()) out += '.';
      out += loc[i].get<std::string>();
    }
  }
  return out;
}

// The text of a content list's parts of the given types, joined by "\n";
// a string is the text itself. nullopt (recorded) on a bad shape.
std::optional<std::string> read_parts(FieldChecker& check, const json& value, const json& loc,
                                      std::initializer_list<const char*> types) {
  if (value.is_string()) return value.get<std::string>();
  if (!check.is_array(value, loc)) return std::nullopt;
  std::string text;
  bool ok = true;
  for (size_t i = 0; i < value.size(); ++i) {
    const json part_loc = loc_append(loc, int(i));
    const json& part = value[i];
    if (!check.is_object(part, part_loc)) {
      ok = false;
      continue;
    }
    const auto name = check.string_field(part, part_loc, "type", true);
    if (!name) {
      ok = false;
      continue;
    }
    if (std::none_of(types.begin(), types.end(), [&](const char* t) { return *name == t; })) {
      std::string allowed;
      for (const char* t : types) allowed += std::string(allowed.empty() ? "" : ", ") + t;
      check.add(loc_append(part_loc, "type"), "'" + *name + "' is not supported here (" + allowed + ")",
                "literal_error");
      ok = false;
      continue;
    }
    const auto s = check.string_field(part, part_loc, "text", true);
    if (!s) {
      ok = false;
      continue;
    }
    if (i > 0) text += '\n';
    text += *s;
  }
  if (!ok) return std::nullopt;
  return text;
}

// The texts of a reasoning item's summary and content parts.
std::string reasoning_text(const json& item) {
  std::string text;
  for (const char* key : {"content", "summary"}) {
    if (!item.contains(key) || !item[key].is_array()) continue;
    for (const json& part : item[key])
      if (part.is_object() && part.contains("text") && part["text"].is_string()) {
        if (!text.empty()) text += '\n';
        text += part["text"].get<std::string>();
      }
    if (!text.empty()) return text;  // the full reasoning when given, else its summary
  }
  return text;
}

// Item types that are the server-run tools' calls, which a stateless server
// that never ran them cannot have produced: refused by name.
bool server_tool_item(const std::string& type) {
  return type.find("_call") != std::string::npos && type != "function_call" && type != "function_call_output";
}

void read_items(FieldChecker& check, const json& items, const json& loc, ChatRequest& request) {
  std::string pending_reasoning;       // a reasoning item's text, for the next assistant turn
  bool assistant_open = false;         // the last message is an assistant turn calls may join
  std::map<std::string, std::string> call_names;  // call_id -> name, for the outputs' messages
  const auto assistant_turn = [&]() -> ChatMessage& {
    if (!assistant_open) {
      request.messages.emplace_back(ChatRole::Assistant, "");
      assistant_open = true;
    }
    ChatMessage& m = request.messages.back();
    if (!pending_reasoning.empty() && m.reasoning.empty()) m.reasoning = std::move(pending_reasoning);
    pending_reasoning.clear();
    return m;
  };
  for (size_t i = 0; i < items.size(); ++i) {
    const json item_loc = loc_append(loc, int(i));
    const json& item = items[i];
    if (!check.is_object(item, item_loc)) continue;
    std::string type = "message";
    if (auto s = check.string_field(item, item_loc, "type")) type = *s;
    if (type == "message") {
      const auto name = check.string_field(item, item_loc, "role", true);
      const json* content = check.field(item, item_loc, "content", true);
      if (!name || !content) continue;
      std::optional<ChatRole> r;
      if (*name == "user") r = ChatRole::User;
      else if (*name == "assistant") r = ChatRole::Assistant;
      else if (*name == "system" || *name == "developer") r = ChatRole::System;
      if (!r) {
        check.add(loc_append(item_loc, "role"), "Input should be 'user', 'assistant', 'system' or 'developer'",
                  "literal_error");
        continue;
      }
      const auto text = read_parts(check, *content, loc_append(item_loc, "content"),
                                   {"input_text", "output_text", "text", "refusal"});
      if (!text) continue;
      if (*r == ChatRole::Assistant) {
        assistant_open = false;  // a message item starts its own turn
        assistant_turn().content = *text;
      } else {
        request.messages.emplace_back(*r, *text);
        assistant_open = false;
        pending_reasoning.clear();  // reasoning belongs to the assistant output right after it, if any
      }
    } else if (type == "function_call") {
      const auto id = check.string_field(item, item_loc, "call_id", true);
      const auto fn = check.string_field(item, item_loc, "name", true);
      const auto args = check.string_field(item, item_loc, "arguments", true);
      if (!id || !fn || !args) continue;
      // The chat shape read_openai_tool_calls checks (the arguments a JSON object's text).
      const json calls = json::array({{{"id", *id}, {"type", "function"}, {"function", {{"name", *fn}, {"arguments", *args}}}}});
      const auto read = read_openai_tool_calls(check, calls, item_loc);
      if (!read) continue;
      ChatMessage& turn = assistant_turn();
      if (turn.tool_calls.is_null()) turn.tool_calls = json::array();
      for (const json& c : *read) turn.tool_calls.push_back(c);
      call_names[*id] = *fn;
    } else if (type == "function_call_output") {
      const auto id = check.string_field(item, item_loc, "call_id", true);
      const json* output = check.field(item, item_loc, "output", true);
      const auto text = output ? read_parts(check, *output, loc_append(item_loc, "output"), {"input_text", "output_text"})
                               : std::nullopt;
      if (!id || !text) continue;
      ChatMessage result(ChatRole::Tool, *text);
      result.tool_call_id = *id;
      if (const auto it = call_names.find(*id); it != call_names.end()) result.name = it->second;
      request.messages.push_back(std::move(result));
      assistant_open = false;
      pending_reasoning.clear();
    } else if (type == "reasoning") {
      pending_reasoning = reasoning_text(item);
    } else if (type == "item_reference") {
      check.add(item_loc, "item_reference is not supported: send the item itself, or previous_response_id",
                "value_error");
    } else if (server_tool_item(type)) {
      check.add(loc_append(item_loc, "type"), "'" + type + "' items are the calls of tools this server does not run",
                "literal_error");
    } else {
      check.add(loc_append(item_loc, "type"),
                "Input should be 'message', 'function_call', 'function_call_output' or 'reasoning'", "literal_error");
    }
  }
}

// A Responses tool as the chat shape read_openai_tools reads; nullopt for a
// tool type this server cannot run (left out of the prompt).
std::optional<json> chat_tool(const json& tool) {
  if (!tool.is_object() || tool.value("type", json()) != "function") return std::nullopt;
  json function = json::object();
  for (const char* key : {"name", "description", "parameters", "strict"})
    if (tool.contains(key)) function[key] = tool[key];
  return json{{"type", "function"}, {"function", std::move(function)}};
}

}  // namespace

ResponsesBuilder::ResponsesBuilder(std::string model, SamplingParams defaults)
    : ResponseBuilder(defaults), model_(std::move(model)), id_(random_id("resp_")), created_(unix_time_now()) {}

void ResponsesBuilder::read_input(FieldChecker& check, const json& body, ChatRequest& request) {
  const json loc = json::array({"body"});
  if (auto s = check.string_field(body, loc, "instructions")) {
    instructions_ = *s;
    request.messages.emplace_back(ChatRole::System, *s);
  }
  // The conversation a previous response left (its input and output items), continued by this input.
  json previous = json::array();
  if (auto id = check.string_field(body, loc, "previous_response_id")) {
    previous_response_id_ = *id;
    std::optional<ResponseStore::Stored> stored = store_ ? store_->get(*id) : std::nullopt;
    if (stored) previous = std::move(stored->conversation);
    else check.add(loc_append(loc, "previous_response_id"), "Previous response with id '" + *id + "' not found.",
                   "previous_response_not_found");
  }
  const json* input = check.field(body, loc, "input", true);
  if (!input) return;
  json items;
  if (input->is_string()) {
    items = json::array({{{"type", "message"}, {"role", "user"}, {"content", *input}}});
  } else if (check.is_array(*input, loc_append(loc, "input"))) {
    items = *input;
  } else {
    return;
  }
  if (!previous.empty()) {
    // This input checked alone first, so that an error names its own item's index.
    ChatRequest alone;
    read_items(check, items, loc_append(loc, "input"), alone);
    if (!check.ok()) return;
  }
  conversation_ = std::move(previous);
  for (json& item : items) conversation_.push_back(std::move(item));
  read_items(check, conversation_, loc_append(loc, "input"), request);
  if (check.ok() && std::none_of(request.messages.begin(), request.messages.end(),
                                 [](const ChatMessage& m) { return m.role != ChatRole::System; }))
    check.add(loc_append(loc, "input"), "Input should have at least 1 item besides instructions", "too_short");
}

void ResponsesBuilder::read_fields(FieldChecker& check, const json& body, ChatRequest& request,
                                   CommonParameters& common) {
  const json loc = json::array({"body"});
  if (const json* v = check.field(body, loc, "max_output_tokens"))
    if (auto n = check.integer(*v, loc_append(loc, "max_output_tokens"))) {
      check.at_least(double(*n), 1, loc_append(loc, "max_output_tokens"));
      common.max_tokens = int(std::min<long long>(*n, 1 << 30));
      max_output_tokens_ = common.max_tokens;
    }
  if (const json* v = check.field(body, loc, "store"))
    if (auto keep = check.boolean(*v, loc_append(loc, "store"))) store_requested_ = *keep;
  if (const json* v = check.field(body, loc, "metadata"))
    if (check.is_object(*v, loc_append(loc, "metadata"))) metadata_ = *v;
  // text.format: response_format's shapes, flattened (json_schema's name and
  // schema beside its type); read as a chat request's response_format.
  if (const json* text = check.field(body, loc, "text")) {
    if (check.is_object(*text, loc_append(loc, "text"))) {
      text_ = *text;
      if (const json* format = check.field(*text, loc_append(loc, "text"), "format")) {
        if (check.is_object(*format, loc_append(loc_append(loc, "text"), "format"))) {
          json response_format = {{"type", format->value("type", json())}};
          if (format->value("type", json()) == "json_schema") {
            json schema = json::object();
            for (const char* key : {"name", "schema", "strict", "description"})
              if (format->contains(key)) schema[key] = (*format)[key];
            response_format["json_schema"] = std::move(schema);
          }
          read_structured_output_fields(check, json{{"response_format", std::move(response_format)}}, request);
        }
      }
    }
  }
  if (const json* r = check.field(body, loc, "reasoning"))
    if (check.is_object(*r, loc_append(loc, "reasoning"))) reasoning_ = {{"effort", r->value("effort", json())},
                                                                          {"summary", r->value("summary", json())}};
  if (common.temperature) temperature_ = common.temperature;
  if (common.top_p) top_p_ = common.top_p;
}

void ResponsesBuilder::check_request(const json& body, ChatRequest& request) {
  // The tools, tool_choice and reasoning effort in the chat shape, read as a
  // chat completion's (InvalidRequestError naming the chat field on a bad one).
  json chat = json::object();
  if (body.contains("tools") && !body["tools"].is_null()) {
    if (!body["tools"].is_array()) throw InvalidRequestError("tools must be a list");
    json tools = json::array();
    for (const json& tool : body["tools"]) {
      if (auto t = chat_tool(tool)) {
        tools.push_back(*t);
        tools_.push_back(tool);
      } else if (tool.is_object() && tool.value("type", json()) == "namespace" && tool.contains("tools") &&
                 tool["tools"].is_array()) {
        // Codex groups tools in namespaces: their function tools join the
        // list under their own names (the template shows them all).
        bool any = false;
        for (const json& inner : tool["tools"])
          if (auto t = chat_tool(inner)) {
            tools.push_back(*t);
            any = true;
          }
        if (any) tools_.push_back(tool);
      }
    }
    chat["tools"] = std::move(tools);
  }
  if (body.contains("tool_choice") && !body["tool_choice"].is_null()) {
    const json& choice = body["tool_choice"];
    tool_choice_ = choice;
    if (choice.is_object() && choice.value("type", json()) == "function" && choice.contains("name"))
      chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", choice["name"]}}}};
    else if (choice.is_string())
      chat["tool_choice"] = choice;
    else
      throw InvalidRequestError("tool_choice must be 'none', 'auto', 'required' or {\"type\": \"function\", \"name\": ...}");
  }
  if (body.contains("parallel_tool_calls") && !body["parallel_tool_calls"].is_null()) {
    chat["parallel_tool_calls"] = body["parallel_tool_calls"];
    if (body["parallel_tool_calls"].is_boolean()) parallel_tool_calls_ = body["parallel_tool_calls"].get<bool>();
  }
  const json effort = reasoning_.value("effort", json());
  if (!effort.is_null()) {
    if (effort == "none" || effort == "minimal") chat["chat_template_kwargs"] = {{"enable_thinking", false}};
    chat["reasoning_effort"] = effort;  // and its thinking budget (reasoning_effort.h)
  }
  read_openai_tools(chat, request);
}

// ---- the response object ----

json ResponsesBuilder::response_object(const std::string& status, json output, const std::vector<CompletionResult>* choices) const {
  std::string output_text;
  for (const json& item : output)
    if (item.value("type", "") == "message")
      for (const json& part : item["content"])
        if (part.value("type", "") == "output_text") output_text += part["text"].get<std::string>();
  json r = {{"id", id_},
            {"object", "response"},
            {"created_at", created_},
            {"status", status},
            {"background", false},
            {"error", nullptr},
            {"incomplete_details", nullptr},
            {"instructions", instructions_},
            {"max_output_tokens", max_output_tokens_ ? json(*max_output_tokens_) : json(nullptr)},
            {"model", model_},
            {"output", std::move(output)},
            {"output_text", output_text},
            {"parallel_tool_calls", parallel_tool_calls_},
            {"previous_response_id", previous_response_id_},
            {"reasoning", reasoning_},
            {"store", store_ != nullptr && store_requested_},
            {"temperature", temperature_ ? json(*temperature_) : json(nullptr)},
            {"text", text_},
            {"tool_choice", tool_choice_},
            {"tools", tools_},
            {"top_p", top_p_ ? json(*top_p_) : json(nullptr)},
            {"truncation", "disabled"},
            {"usage", nullptr},
            {"metadata", metadata_}};
  if (status == "incomplete") r["incomplete_details"] = {{"reason", "max_output_tokens"}};
  if (choices && !choices->empty()) {
    const CompletionResult& c = choices->front();
    r["usage"] = {{"input_tokens", c.prompt_tokens},
                  {"input_tokens_details", {{"cached_tokens", c.cached_prompt_tokens}}},
                  {"output_tokens", c.completion_tokens},
                  {"output_tokens_details", {{"reasoning_tokens", c.reasoning_tokens}}},
                  {"total_tokens", c.prompt_tokens + c.completion_tokens}};
  }
  return r;
}

namespace {

json reasoning_item(const std::string& id, const std::string& text) {
  return {{"id", id},
          {"type", "reasoning"},
          {"summary", json::array()},
          {"content", json::array({{{"type", "reasoning_text"}, {"text", text}}})}};
}

json message_item(const std::string& id, const std::string& status, const std::string& text) {
  return {{"id", id},
          {"type", "message"},
          {"status", status},
          {"role", "assistant"},
          {"content", json::array({{{"type", "output_text"}, {"text", text}, {"annotations", json::array()}}})}};
}

json call_item(const ToolCall& call, const std::string& status) {
  return {{"id", "fc_" + call.id.substr(call.id.find('_') + 1)},
          {"type", "function_call"},
          {"status", status},
          {"call_id", call.id},
          {"name", call.name},
          {"arguments", call.arguments}};
}

}  // namespace

json ResponsesBuilder::format_response(const std::vector<CompletionResult>& choices) {
  const CompletionResult& c = choices.at(0);
  const std::string status = cut_short(c) ? "incomplete" : "completed";
  json output = json::array();
  if (!c.reasoning.empty()) output.push_back(reasoning_item(random_id("rs_"), c.reasoning));
  // The item the output ended in is incomplete when max_output_tokens cut
  // it; the items before it are whole (as their stream closed them).
  if (!c.text.empty() || c.tool_calls.empty())
    output.push_back(message_item(random_id("msg_"), c.tool_calls.empty() ? status : "completed", c.text));
  for (size_t i = 0; i < c.tool_calls.size(); ++i)
    output.push_back(call_item(c.tool_calls[i], i + 1 == c.tool_calls.size() ? status : "completed"));
  json response = response_object(status, std::move(output), &choices);
  keep(response);
  return response;
}

void ResponsesBuilder::keep(const json& response) {
  if (!store_ || !store_requested_) return;
  json conversation = conversation_;
  for (const json& item : response["output"]) conversation.push_back(item);  // output items are input items as they are
  store_->put(id_, {response, std::move(conversation)});
}

json ResponsesBuilder::format_error(ErrorKind kind, const std::string& message) const {
  return openai_error_body(kind, message);
}

std::optional<ErrorResponse> ResponsesBuilder::format_validation_error(const ValidationError& error) const {
  // OpenAI's 400: the first bad field named as `param`, every message joined;
  // its code invalid_value, or previous_response_not_found as OpenAI's.
  std::string message, param, code = "invalid_value";
  for (const FieldError& e : error.errors()) {
    const std::string where = param_of(e.loc);
    if (param.empty()) param = where;
    if (e.type == "previous_response_not_found" && message.empty()) code = e.type;
    if (!message.empty()) message += "; ";
    if (!where.empty()) message += where + ": ";
    message += e.msg;
  }
  json body = openai_error_body(ErrorKind::InvalidRequest, message);
  body["error"]["param"] = param.empty() ? json(nullptr) : json(param);
  body["error"]["code"] = code;
  return ErrorResponse{400, std::move(body)};
}

// ---- the stream ----

std::string ResponsesBuilder::event(const std::string& type, json payload) {
  json e = {{"type", type}, {"sequence_number", sequence_++}};
  for (auto& [key, value] : payload.items()) e[key] = std::move(value);
  return sse_event(type, e);
}

std::string ResponsesBuilder::format_stream_start(int) {
  std::string out = event("response.created", {{"response", response_object("in_progress", json::array(), nullptr)}});
  return out + event("response.in_progress", {{"response", response_object("in_progress", json::array(), nullptr)}});
}

std::string ResponsesBuilder::open_item(const std::string& kind) {
  if (open_kind_ == kind) return "";
  std::string out = close_item();
  open_kind_ = kind;
  open_text_.clear();
  const int index = int(streamed_.size());
  json item = kind == "reasoning" ? reasoning_item(random_id("rs_"), "") : message_item(random_id("msg_"), "in_progress", "");
  item["content"] = json::array();  // the parts come with their own events
  streamed_.push_back(item);
  out += event("response.output_item.added", {{"output_index", index}, {"item", item}});
  const json part = kind == "reasoning" ? json{{"type", "reasoning_text"}, {"text", ""}}
                                        : json{{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}};
  return out + event("response.content_part.added",
                     {{"item_id", item["id"]}, {"output_index", index}, {"content_index", 0}, {"part", part}});
}

std::string ResponsesBuilder::close_item() {
  if (open_kind_.empty()) return "";
  const int index = int(streamed_.size()) - 1;
  json& item = streamed_.back();
  const json id = item["id"];
  std::string out;
  if (open_kind_ == "function_call") {
    out += event("response.function_call_arguments.done",
                 {{"item_id", id}, {"output_index", index}, {"arguments", open_call_.arguments}});
    item = call_item(open_call_, incomplete_ ? "incomplete" : "completed");
  } else if (open_kind_ == "reasoning") {
    out += event("response.reasoning_text.done",
                 {{"item_id", id}, {"output_index", index}, {"content_index", 0}, {"text", open_text_}});
    const json part = {{"type", "reasoning_text"}, {"text", open_text_}};
    out += event("response.content_part.done",
                 {{"item_id", id}, {"output_index", index}, {"content_index", 0}, {"part", part}});
    item = reasoning_item(id.get<std::string>(), open_text_);
  } else {
    out += event("response.output_text.done",
                 {{"item_id", id}, {"output_index", index}, {"content_index", 0}, {"text", open_text_}});
    const json part = {{"type", "output_text"}, {"text", open_text_}, {"annotations", json::array()}};
    out += event("response.content_part.done",
                 {{"item_id", id}, {"output_index", index}, {"content_index", 0}, {"part", part}});
    item = message_item(id.get<std::string>(), incomplete_ ? "incomplete" : "completed", open_text_);
  }
  out += event("response.output_item.done", {{"output_index", index}, {"item", item}});
  open_kind_.clear();
  open_text_.clear();
  return out;
}

std::string ResponsesBuilder::format_chunk(int, std::string_view text, const json&) {
  if (text.empty()) return "";
  std::string out = open_item("message");
  open_text_ += text;
  const int index = int(streamed_.size()) - 1;
  return out + event("response.output_text.delta", {{"item_id", streamed_.back()["id"]},
                                                    {"output_index", index},
                                                    {"content_index", 0},
                                                    {"delta", std::string(text)}});
}

std::string ResponsesBuilder::format_reasoning_chunk(int, std::string_view text) {
  if (text.empty()) return "";
  std::string out = open_item("reasoning");
  open_text_ += text;
  const int index = int(streamed_.size()) - 1;
  return out + event("response.reasoning_text.delta", {{"item_id", streamed_.back()["id"]},
                                                       {"output_index", index},
                                                       {"content_index", 0},
                                                       {"delta", std::string(text)}});
}

// A call is an output item open while its arguments stream; it closes (its
// arguments' .done, then output_item.done) when the next item opens or the
// output ends, so that its status can say whether max_output_tokens cut it.
std::string ResponsesBuilder::format_tool_call_start(int, int, const ToolCall& call) {
  std::string out = close_item();
  open_kind_ = "function_call";
  open_call_ = call;
  const int index = int(streamed_.size());
  json item = call_item(call, "in_progress");
  streamed_.push_back(item);
  return out + event("response.output_item.added", {{"output_index", index}, {"item", item}});
}

std::string ResponsesBuilder::format_tool_call_arguments(int, int, const ToolCall&, std::string_view piece) {
  open_call_.arguments += piece;  // the piece only: copying the whole text each piece is quadratic in it
  const int index = int(streamed_.size()) - 1;
  return event("response.function_call_arguments.delta",
               {{"item_id", streamed_.back()["id"]}, {"output_index", index}, {"delta", std::string(piece)}});
}

std::string ResponsesBuilder::format_choice_end(const CompletionResult& choice) {
  incomplete_ = cut_short(choice);
  return close_item();
}

std::string ResponsesBuilder::format_stream_end(const std::vector<CompletionResult>& choices) {
  const CompletionResult& c = choices.at(0);
  incomplete_ = cut_short(c);
  std::string out = close_item();
  // A response with no output item still has its (empty) message, as whole.
  if (streamed_.empty()) {
    out += open_item("message");
    out += close_item();
  }
  const bool incomplete = cut_short(c);
  const json response = response_object(incomplete ? "incomplete" : "completed", streamed_, &choices);
  keep(response);
  return out + event(incomplete ? "response.incomplete" : "response.completed", {{"response", response}});
}

std::string ResponsesBuilder::format_stream_error(ErrorKind kind, const std::string& message) {
  // An error event, then the response failed (OpenAI's order for a late failure).
  const json error = openai_error_body(kind, message)["error"];
  std::string out = event("error", {{"code", error["code"]}, {"message", message}, {"param", nullptr}});
  json response = response_object("failed", streamed_, nullptr);
  response["error"] = {{"code", error["code"].is_null() ? json("server_error") : error["code"]}, {"message", message}};
  return out + event("response.failed", {{"response", response}});
}

}  // namespace astrai
