#include "engine/chat_planning/chat_plan.h"

#include "engine/chat_planning/harmony_output.h"
#include "engine/chat_planning/reasoning_effort.h"
#include "engine/chat_planning/reasoning_split.h"
#include "engine/grammar/thinking_budget.h"
#include "engine/request_defaults.h"
#include "engine/scheduler/inference_scheduler.h"
#include "engine/scheduler/prompt_limit.h"

namespace astrai {

using nlohmann::ordered_json;

namespace {

// The grammar that enforces a request's tools, or nullopt when there is
// nothing to enforce (no tools, tool_choice none, or a model whose calls
// this server cannot read). required: one or more calls (exactly one when
// !parallel_tool_calls) in the family's syntax, each to one of the tools
// with arguments valid against its parameters schema; named: the same with
// the one tool; auto: free text, but once the family's opener appears the
// calls must be valid (a lazy grammar, as llama.cpp's: ConstraintSpec::lazy).
std::optional<grammar::ConstraintSpec> tool_call_spec(const ChatRequest& request, ToolCallFamily family) {
  const ToolCallFormat* format = tool_call_format(family);
  if (request.tools.is_null() || request.tool_choice.mode == ToolChoice::Mode::None || !format) return std::nullopt;
  ordered_json tools = ordered_json::array();  // [{"name", "parameters"}] the output may call
  for (const ordered_json& tool : request.tools) {
    const ordered_json& f = tool["function"];
    if (request.tool_choice.mode == ToolChoice::Mode::Named && f["name"] != request.tool_choice.name) continue;
    tools.push_back({{"name", f["name"]}, {"parameters", f.value("parameters", ordered_json::object())}});
  }
  grammar::ConstraintSpec spec;
  spec.kind = grammar::ConstraintSpec::Kind::ToolCalls;
  spec.lazy = request.tool_choice.mode == ToolChoice::Mode::Auto;
  spec.text = tools.dump();
  spec.tool_syntax = format->syntax;
  spec.single_call = !request.parallel_tool_calls || format->one_call_per_turn;
  return spec;
}

// A refused constraint, as the 400's message: what is wrong, the keyword and
// its JSON pointer in the schema ("" for a regex).
std::string constraint_error_message(const grammar::ConstraintError& e) {
  std::string message = std::string("invalid output constraint: ") + e.what();
  if (!e.keyword.empty()) message += " (keyword \"" + e.keyword + "\"";
  if (!e.keyword.empty()) message += e.pointer.empty() ? ")" : " at \"" + e.pointer + "\")";
  else if (!e.pointer.empty()) message += " (at \"" + e.pointer + "\")";
  return message;
}

// A chat request's prompt ids, and whether the prompt leaves the thinking
// open or closed (reasoning_split.h). The bytes are checked first: a prompt
// that cannot fit whatever its tokens is refused without tokenizing it
// (which costs time, and memory that a stream of oversized prompts would
// make the allocator hold).
struct EncodedChat {
  std::vector<int> ids;
  bool opens_reasoning = false, closes_reasoning = false;
};

EncodedChat encode_chat(const ChatRequest& request, const ChatModel& model) {
  const int context = model.engine->model_config().max_seq_len;
  const Prompt rendered = render_chat(request, *model.chat_template);
  size_t text_bytes = 0;
  for (const PromptPart& part : rendered)
    if (part.kind == PromptPart::Kind::Text || part.kind == PromptPart::Kind::Rendered) text_bytes += part.text.size();
  if (const auto too_long = prompt_surely_too_long(text_bytes, model.max_token_bytes, context))
    throw ChatError(ErrorKind::ContextLength, *too_long);
  const std::string text = prompt_text(rendered);
  return {model.encode(rendered), prompt_opens_reasoning(text), prompt_closes_reasoning(text)};
}

}  // namespace

Prompt render_chat(const ChatRequest& request, const ChatTemplate& chat_template) {
  try {
    return chat_template.render(request.messages, ChatOptions{request.tools, request.chat_template_kwargs});
  } catch (const std::exception& e) {  // the model's own template refused the conversation
    throw ChatError(ErrorKind::InvalidRequest, std::string("chat template: ") + e.what());
  }
}

namespace {

// A conversation's prompt (chat routes): the tools' grammar unless a
// response format constrains the text, the messages rendered and encoded,
// and how the output is read (the reasoning split, the model's tool calls).
std::vector<int> plan_conversation(ChatRequest& chat, const ChatModel& model, ChatPlan& plan) {
  // tool_choice "required" or a named tool: the output is the calls, by
  // grammar; "auto": text, or valid calls once the family's opener appears
  // (a lazy grammar), unless response_format constrains the text instead.
  if (auto spec = tool_call_spec(chat, model.tool_call_family)) {
    if (chat.constraint && !spec->lazy)
      throw ChatError(ErrorKind::InvalidRequest,
                      "tool_choice 'required' (or a named tool) and an output constraint (response_format or the "
                      "structured-output fields) cannot both apply: the output is either the calls or the "
                      "constrained text");
    if (!chat.constraint) chat.constraint = std::move(*spec);
  }
  EncodedChat encoded = encode_chat(chat, model);
  plan.parsing.harmony = model.harmony;
  plan.parsing.reasoning = model.split_reasoning && !model.harmony;
  plan.parsing.starts_in_reasoning = encoded.opens_reasoning;
  // A reasoning model thinks first: the constraint applies after the
  // thinking (reasoning_grammar.h), unless the template closed it in the prompt.
  // gpt-oss's analysis message is optional and its answer opens a message
  // (harmony_markers); a lazy tool grammar already lets any text come first.
  if (chat.constraint && model.harmony) {
    if (!chat.constraint->lazy) {
      chat.constraint->start = grammar::ConstraintSpec::Start::AfterOptionalReasoning;
      chat.constraint->reasoning = harmony_markers(chat.constraint->kind == grammar::ConstraintSpec::Kind::ToolCalls);
    }
  } else if (chat.constraint && model.split_reasoning && !encoded.closes_reasoning) {
    chat.constraint->start = encoded.opens_reasoning ? grammar::ConstraintSpec::Start::AfterReasoning
                                                     : grammar::ConstraintSpec::Start::AfterOptionalReasoning;
    chat.constraint->reasoning = reasoning_markers();
  }
  // gpt-oss thinks in an analysis message the output opens, closed where the
  // next message starts (harmony_markers): its budget forces that close.
  if ((plan.parsing.reasoning && !encoded.closes_reasoning) || plan.parsing.harmony) {
    plan.thinking_vocabulary = model.constraints->vocabulary(model.engine->tokenizer());
    plan.thinking_markers = plan.parsing.harmony ? harmony_markers(false) : reasoning_markers();
    plan.thinking_markers.answer_open.clear();
  }
  if (!chat.tools.is_null() && chat.tool_choice.mode != ToolChoice::Mode::None)
    plan.parsing.tools = model.tool_call_family;
  plan.parsing.parallel_tool_calls = chat.parallel_tool_calls;
  return std::move(encoded.ids);
}

// /v1/completions' prompts as they are (text tokenized with BOS first, as
// `astrai generate` does, or ids), and each one's echo when asked.
std::vector<std::vector<int>> plan_raw_prompts(const ChatRequest& request, const ChatModel& model, ChatPlan& plan) {
  const InferenceEngine& engine = *model.engine;
  std::vector<std::vector<int>> prompts;
  for (const RawPrompt& raw : request.prompts) {
    if (!raw.ids)
      if (const auto too_long =
              prompt_surely_too_long(raw.text.size(), model.max_token_bytes, engine.model_config().max_seq_len))
        throw ChatError(ErrorKind::ContextLength, *too_long);
    prompts.push_back(raw.ids ? *raw.ids : engine.tokenize(raw.text));
    if (request.echo) plan.echoes.push_back(raw.ids ? engine.tokenizer().decode(*raw.ids) : raw.text);
  }
  return prompts;
}

}  // namespace

ChatPlan plan_chat(ChatRequest chat, const ChatModel& model) {
  const InferenceEngine& engine = *model.engine;
  const int context = engine.model_config().max_seq_len;
  ChatPlan plan;
  plan.n = chat.n;
  // One prompt (chat), or each of a completions request's.
  std::vector<std::vector<int>> prompts;
  if (chat.prompts.empty()) prompts.push_back(plan_conversation(chat, model, plan));
  else prompts = plan_raw_prompts(chat, model, plan);
  for (const std::vector<int>& prompt : prompts)
    if (const auto too_long = prompt_too_long(prompt.size(), context)) throw ChatError(ErrorKind::ContextLength, *too_long);
  std::shared_ptr<const grammar::CompiledConstraint> constraint;
  if (chat.constraint) {
    try {
      constraint = model.constraints->get(*chat.constraint, engine.tokenizer());
    } catch (const grammar::ConstraintError& e) {  // a schema or regex outside the subset: 400 naming where
      throw ChatError(ErrorKind::InvalidRequest, constraint_error_message(e));
    }
  }
  plan.prompt_tokens = int(prompts.front().size());
  for (std::vector<int>& prompt : prompts) {
    GenerationRequest request;
    const int room = max_tokens_the_context_leaves(context, int(prompt.size()));
    request.max_tokens = chat.max_tokens.value_or(model.default_max_tokens ? std::min(*model.default_max_tokens, room) : room);
    request.constraint = constraint;  // compiled once, shared by every prompt's choices
    // A thinking closed at its budget (chat routes: one prompt), around the answer's constraint if any.
    if (plan.thinking_vocabulary)  // halves of what the request can get: its max_tokens or the context's room
      plan.thinking_budget = thinking_budget(chat.thinking_budget, chat.reasoning_effort,
                                             chat.constraint && !chat.constraint->lazy, std::min(request.max_tokens, room));
    if (plan.thinking_budget)
      request.constraint = grammar::with_thinking_budget(
          constraint, {*plan.thinking_budget, plan.thinking_markers, plan.parsing.starts_in_reasoning},
          *plan.thinking_vocabulary);
    request.sampling = chat.sampling;
    request.stop = chat.stop;
    request.ignore_eos = chat.ignore_eos;
    request.max_proposed = chat.max_proposed;
    request.stop_token_ids = chat.stop_token_ids;
    request.logprobs = chat.logprobs;
    request.n = chat.n;
    for (int c = 0; c < chat.n; ++c) plan.last_prompt_tokens.push_back(prompt.back());
    request.prompt_ids = std::move(prompt);
    plan.requests.push_back(std::move(request));
  }
  return plan;
}

namespace {

// `report` called with the event's choice number moved by `offset` (a
// prompt's choices are numbered after the earlier prompts').
template <class Event>
std::function<void(const Event&)> renumbered(const std::function<void(const Event&)>& report, int offset) {
  if (!report) return nullptr;
  return [report, offset](const Event& event) {
    Event moved = event;
    moved.index += offset;
    report(moved);
  };
}

}  // namespace

void route_choice_events(ChatPlan& plan, const ChoiceEvents& events) {
  for (size_t i = 0; i < plan.requests.size(); ++i) {
    const int offset = int(i) * plan.n;  // this prompt's choices' first number
    plan.requests[i].on_token = renumbered(events.on_token, offset);
    plan.requests[i].on_finish = renumbered(events.on_finish, offset);
  }
}

ChoicesResult submit_plan(InferenceEngine& engine, ChatPlan& plan) {
  ChoicesResult result;
  for (GenerationRequest& request : plan.requests) {
    try {
      // n = 1 too: one choice is exactly one request (seed + 0, no fork).
      ChoicesResult part = engine.generate_choices(std::move(request));
      result.choices.insert(result.choices.end(), part.choices.begin(), part.choices.end());
    } catch (...) {
      engine.cancel(result);  // the prompts already submitted are for nobody
      throw;
    }
  }
  plan.requests.clear();
  return result;
}

int reasoning_tokens_of(const ChatPlan& plan, const TaskOutput& out) {
  if (!plan.thinking_vocabulary) return 0;
  const grammar::TokenVocabulary& vocabulary = *plan.thinking_vocabulary;
  const grammar::ReasoningMarkers& markers = plan.thinking_markers;
  std::string text;
  bool open = plan.parsing.starts_in_reasoning;
  int tokens = 0;
  for (const int id : out.tokens) {
    if (id < 0 || size_t(id) >= vocabulary.size() || vocabulary.is_end(id)) continue;
    ++tokens;
    const size_t before = text.size();
    text += vocabulary.bytes(id);
    if (!open) {  // the output's first bytes open the thinking, or it never opens
      const size_t common = std::min(text.size(), markers.open.size());
      if (text.compare(0, common, markers.open, 0, common) != 0) return 0;
      if (text.size() < markers.open.size()) continue;
      open = true;
      text.erase(0, markers.open.size());
      if (text.find(markers.close) != std::string::npos) return tokens;
      continue;
    }
    // Only where a close ending in this token's bytes can start: linear in the output.
    const size_t from = before >= markers.close.size() ? before - markers.close.size() + 1 : 0;
    if (text.find(markers.close, from) != std::string::npos) return tokens;
  }
  return tokens;
}

ToolCall tool_call_of(const OutputParsing& parsing, ParsedToolCall parsed, std::string_view id_prefix) {
  return {new_tool_call_id(parsing.tools, id_prefix), std::move(parsed.name), std::move(parsed.arguments)};
}

CompletionResult completion_of(const TaskOutput& out) {
  CompletionResult r;
  r.index = out.index;
  r.text = out.text;
  r.reason = out.reason;
  r.stop_sequence = out.stop_sequence;
  r.prompt_tokens = out.prompt_tokens;
  r.cached_prompt_tokens = out.cached_prompt_tokens;
  r.completion_tokens = int(out.tokens.size());
  return r;
}

CompletionResult choice_result(const ChatPlan& plan, const TaskOutput& out, int choice, std::string_view id_prefix) {
  CompletionResult r = completion_of(out);
  r.index = choice;  // the engine numbers each prompt's choices from 0
  r.reasoning_tokens = reasoning_tokens_of(plan, out);
  if (!plan.echoes.empty()) r.text = plan.echoes[size_t(choice / plan.n)] + r.text;
  if (plan.parsing.active()) {
    ChoiceParts parts = parse_choice_output(out.text, plan.parsing);
    r.text = std::move(parts.content);
    r.reasoning = std::move(parts.reasoning);
    for (ParsedToolCall& call : parts.calls) r.tool_calls.push_back(tool_call_of(plan.parsing, std::move(call), id_prefix));
  }
  return r;
}

std::optional<ChatError> failure_of(const TaskOutput& out) {
  if (out.reason == FinishReason::Error) return ChatError(ErrorKind::Internal, "generation failed: " + out.error);
  if (out.reason == FinishReason::Cancelled)
    return ChatError(ErrorKind::Unavailable, "the request was cancelled (the server is shutting down)");
  return std::nullopt;
}

}  // namespace astrai
