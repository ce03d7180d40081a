#include "server/protocol_handler.h"

#include <algorithm>

#include <httplib.h>

#include "engine/scheduler/prompt_limit.h"
#include "server/protocols/chat_request_parser.h"
#include "engine/chat_planning/choice_output.h"
#include "server/http/client_socket.h"
#include "server/http/json_text.h"
#include "server/protocols/logprobs_content.h"
#include "server/protocols/openai_sampling_fields.h"
#include "server/http/piece_queue.h"
#include "server/protocols/request_id.h"
#include "server/http/sse.h"
#include "server/protocols/tool_request.h"

namespace astrai {

using json = nlohmann::ordered_json;

namespace {

// How often a non-streamed request looks whether its client is still there.
constexpr std::chrono::milliseconds kClientCheckInterval{250};

ToolCall tool_call_of(const ResponseBuilder& builder, const OutputParsing& parsing, ParsedToolCall parsed);

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

void apply_parts(CompletionResult& r, ChoiceParts parts, const OutputParsing& parsing, const ResponseBuilder& builder) {
  r.text = std::move(parts.content);
  r.reasoning = std::move(parts.reasoning);
  for (ParsedToolCall& call : parts.calls) r.tool_calls.push_back(tool_call_of(builder, parsing, std::move(call)));
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

// A request that ended without a normal finish, as an error to report.
std::optional<std::pair<ErrorKind, std::string>> failure_of(const TaskOutput& out) {
  if (out.reason == FinishReason::Error) return std::pair{ErrorKind::Internal, "generation failed: " + out.error};
  if (out.reason == FinishReason::Cancelled)
    return std::pair{ErrorKind::Unavailable, std::string("the request was cancelled (the server is shutting down)")};
  return std::nullopt;
}

// A new tool call of `builder`'s protocol. Mistral's templates require ids
// of exactly 9 letters and digits.
ToolCall tool_call_of(const ResponseBuilder& builder, const OutputParsing& parsing, ParsedToolCall parsed) {
  std::string id = parsing.tools == ToolCallFamily::Mistral ? random_id("", 9) : random_id(builder.tool_call_id_prefix());
  return {std::move(id), std::move(parsed.name), std::move(parsed.arguments)};
}

// Everything a stream needs after the handler has returned.
struct StreamState {
  std::shared_ptr<ServedModel> model;
  std::shared_ptr<ResponseBuilder> builder;
  std::shared_ptr<PieceQueue> queue;
  ChoicesResult result;
  int prompt_tokens = 0;
  std::chrono::milliseconds heartbeat;
  std::vector<LogprobsContent> logprobs;  // one per choice, when the request asked for them
  OutputParsing parsing;
  std::vector<ChoiceOutputStream> parsers;        // one per choice, when parsing.active()
  std::vector<std::vector<ToolCall>> tool_calls;  // each choice's calls so far
};

// A parsed piece of choice `index`'s output, as the builder writes it:
// reasoning, then content (with the logprobs of the tokens that made the
// piece), then each call completed.
std::string format_parts(StreamState& s, int index, ChoiceParts parts, const json& logprobs) {
  std::string out = s.builder->format_reasoning_chunk(index, parts.reasoning);
  if (!parts.content.empty() || !logprobs.is_null()) out += s.builder->format_chunk(index, parts.content, logprobs);
  for (ParsedToolCall& parsed : parts.calls) {
    std::vector<ToolCall>& calls = s.tool_calls[size_t(index)];
    calls.push_back(tool_call_of(*s.builder, s.parsing, std::move(parsed)));
    out += s.builder->format_tool_call(index, int(calls.size()) - 1, calls.back());
  }
  return out;
}

// The whole output's logprobs entries.
json logprobs_content_of(const ServedModel& model, int previous_token, const TaskOutput& out) {
  std::vector<std::pair<int, TokenLogprobs>> tokens;
  for (size_t i = 0; i < out.logprobs.size() && i < out.tokens.size(); ++i) tokens.emplace_back(out.tokens[i], out.logprobs[i]);
  return LogprobsContent(model.engine->tokenizer(), previous_token).entries(tokens);
}

// Cancels the choices other than `except` that are still running (only
// those: /stats counts a cancel even for a task that had ended).
void cancel_running_choices(const StreamState& s, int except) {
  for (size_t i = 0; i < s.result.choices.size(); ++i)  // choices[i] is choice i
    if (int(i) != except && !s.result.choices[i]->done()) s.model->engine->cancel(*s.result.choices[i]);
}

// httplib calls this once on the worker thread; it writes the whole stream:
// the choices' chunks as they come, each choice's end as it ends, and the
// stream's end once all have. Returns false (and cancels every choice) when
// the client stopped taking it; a choice that fails ends the stream with the
// error and cancels the others.
bool write_stream(StreamState& s, httplib::DataSink& sink) {
  auto send = [&](const std::string& bytes) { return sink.write(bytes.data(), bytes.size()); };
  auto abandon = [&] {
    s.model->engine->cancel(s.result);
    return false;
  };
  s.builder->set_output_parsing(s.parsing.active());
  if (!send(s.builder->format_stream_start(s.prompt_tokens))) return abandon();
  std::vector<CompletionResult> ended;
  for (;;) {
    const PieceQueue::Batch batch = s.queue->next(s.heartbeat);
    bool text_sent = false;
    for (const PieceQueue::Piece& piece : batch.pieces) {
      if (!piece.text.empty() || !piece.logprobs.empty()) {
        // Tokens whose text is still held back (part of a character, the
        // possible start of a stop string) send their logprobs now with an
        // empty content: a client joins the entries as it joins the text.
        const json content = s.logprobs.empty() ? json(nullptr) : s.logprobs[size_t(piece.index)].entries(piece.logprobs);
        const std::string bytes = s.parsing.active()
                                      ? format_parts(s, piece.index, s.parsers[size_t(piece.index)].feed(piece.text), content)
                                      : s.builder->format_chunk(piece.index, piece.text, content);
        if (!bytes.empty() && !send(bytes)) return abandon();
        text_sent = text_sent || !piece.text.empty();
      }
      if (!piece.output) continue;
      if (s.parsing.active() && !failure_of(*piece.output)) {  // what the parsers held back
        const std::string rest = format_parts(s, piece.index, s.parsers[size_t(piece.index)].finish(), json(nullptr));
        if (!rest.empty() && !send(rest)) return abandon();
      }
      if (const auto failure = failure_of(*piece.output)) {
        cancel_running_choices(s, piece.index);  // the response failed: they are for nobody
        if (!send(s.builder->format_stream_error(failure->first, failure->second))) return false;
        sink.done();
        return true;
      }
      ended.push_back(completion_of(*piece.output));
      if (s.parsing.active()) ended.back().tool_calls = s.tool_calls[size_t(piece.index)];
      std::string tail = s.builder->format_choice_end(ended.back());
      const bool last = ended.size() == s.result.choices.size();
      if (last) {
        std::ranges::sort(ended, {}, &CompletionResult::index);
        tail += s.builder->format_stream_end(ended);
      }
      if (!send(tail)) return last ? false : abandon();  // after the last, nothing is left to cancel
      if (last) {
        sink.done();
        return true;
      }
    }
    if (!text_sent && !send(sse_comment("waiting"))) return abandon();
  }
}

}  // namespace

ProtocolHandler::ProtocolHandler(const httplib::Request& request, std::shared_ptr<ServedModel> model,
                                 std::shared_ptr<ResponseBuilder> builder, std::chrono::milliseconds heartbeat,
                                 std::shared_ptr<ServerMetrics> metrics)
    : request_(request),
      model_(std::move(model)),
      builder_(std::move(builder)),
      heartbeat_(heartbeat),
      metrics_(std::move(metrics)) {}

void ProtocolHandler::send_error(httplib::Response& response, ErrorKind kind, const std::string& message) const {
  response.status = http_status(kind);
  response.set_content(json_text(builder_->format_error(kind, message)), "application/json");
}

void ProtocolHandler::handle(httplib::Response& response) {
  const auto timing = metrics_ ? metrics_->start_request() : nullptr;
  ParsedChatRequest parsed = parse_chat_request(*builder_, request_.body);
  if (!parsed.ok()) {
    response.status = parsed.status;
    response.set_content(json_text(parsed.error_body), "application/json");
    return;
  }
  ChatRequest chat = std::move(*parsed.request);

  InferenceEngine& engine = *model_->engine;
  try {  // ids past the vocabulary: 422 naming the field, as every other bad value
    FieldChecker check;
    check_token_ids(check, chat, engine.model_config().vocab_size);
    check.throw_if_any();
  } catch (const ValidationError& e) {
    response.status = 422;
    response.set_content(json_text(e.body()), "application/json");
    return;
  }
  // tool_choice "required" or a named tool: the output is the calls, by
  // grammar; "auto": text, or valid calls once the family's opener appears
  // (a lazy grammar), unless response_format constrains the text instead.
  if (const auto tools = chat.prompts.empty() ? tool_call_constraint(chat, model_->tool_call_family) : std::nullopt)
    if (auto spec = tool_call_spec(*tools)) {
      if (chat.constraint && !spec->lazy)
        return send_error(response, ErrorKind::InvalidRequest,
                          "tool_choice 'required' (or a named tool) and an output constraint (response_format or the "
                          "structured-output fields) cannot both apply: the output is either the calls or the constrained text");
      if (!chat.constraint) chat.constraint = std::move(*spec);
    }
  const int context = engine.model_config().max_seq_len;
  std::vector<std::vector<int>> prompts;  // one (chat), or each of a completions request's
  std::vector<std::string> echoes;        // completions with echo: each prompt's text
  OutputParsing parsing;  // chat outputs only: completions are text as it came
  if (chat.prompts.empty()) {
    std::vector<int> prompt;
    bool opens_reasoning = false, closes_reasoning = false;
    if (const auto error = encode_chat(chat, prompt, opens_reasoning, closes_reasoning))
      return send_error(response, error->first, error->second);
    prompts.push_back(std::move(prompt));
    parsing.reasoning = model_->split_reasoning;
    parsing.starts_in_reasoning = opens_reasoning;
    // A reasoning model thinks first: the constraint applies after "</think>"
    // (the rule of the reasoning split, engine/grammar/reasoning_grammar.h),
    // unless the template closed the thinking in the prompt.
    if (chat.constraint && model_->split_reasoning && !closes_reasoning)
      chat.constraint->start = opens_reasoning ? grammar::ConstraintSpec::Start::AfterReasoning
                                               : grammar::ConstraintSpec::Start::AfterOptionalReasoning;
    if (!chat.tools.is_null() && chat.tool_choice.mode != ToolChoice::Mode::None) parsing.tools = model_->tool_call_family;
    parsing.parallel_tool_calls = chat.parallel_tool_calls;
  } else {
    for (RawPrompt& raw : chat.prompts) {
      if (!raw.ids && prompt_surely_too_long(raw.text.size(), model_->max_token_bytes, context))
        return send_error(response, ErrorKind::ContextLength, *prompt_surely_too_long(raw.text.size(), model_->max_token_bytes, context));
      prompts.push_back(raw.ids ? *raw.ids : engine.tokenize(raw.text));  // BOS first, as `astrai generate`
      if (chat.echo) echoes.push_back(raw.ids ? engine.tokenizer().decode(*raw.ids) : raw.text);
    }
  }
  for (const std::vector<int>& prompt : prompts)
    if (const auto too_long = prompt_too_long(prompt.size(), context))
      return send_error(response, ErrorKind::ContextLength, *too_long);
  std::shared_ptr<const grammar::CompiledConstraint> constraint;
  if (chat.constraint) {
    try {
      constraint = model_->constraints->get(*chat.constraint, engine.tokenizer());
    } catch (const grammar::ConstraintError& e) {  // a schema or regex outside the subset: 400 naming where
      return send_error(response, ErrorKind::InvalidRequest, constraint_error_message(e));
    }
  }
  const int prompt_tokens = int(prompts.front().size());

  const size_t choices = prompts.size() * size_t(chat.n);
  std::shared_ptr<PieceQueue> queue;
  if (chat.stream) queue = std::make_shared<PieceQueue>(int(choices));
  // Echoed prompts are each choice's first text, streamed or not.
  for (size_t i = 0; queue && i < echoes.size(); ++i)
    for (int c = 0; c < chat.n; ++c) queue->push(int(i) * chat.n + c, echoes[i]);
  ChoicesResult result;
  std::vector<LogprobsContent> logprobs;  // each choice's entries start after its prompt's last token
  std::vector<int> last_prompt_tokens;    // per choice
  for (size_t i = 0; i < prompts.size(); ++i) {
    const int offset = int(i) * chat.n;  // this prompt's choices' first index
    GenerationRequest request;
    const int tokens = int(prompts[i].size());
    // Omitted (OpenAI): what the context leaves. The engine ends a request when
    // the context is full (finish reason ContextLimit), which for a prompt of
    // P tokens is after context - P + 1 tokens (prompt_limit.h), so this bound
    // never ends a request before the context does.
    request.max_tokens = chat.max_tokens.value_or(context - tokens + 1);
    request.sampling = chat.sampling;
    request.stop = chat.stop;
    request.ignore_eos = chat.ignore_eos;
    request.stop_token_ids = chat.stop_token_ids;
    request.logprobs = chat.logprobs;
    request.n = chat.n;
    request.constraint = constraint;  // compiled once, shared by every prompt's choices
    for (int c = 0; c < chat.n; ++c) last_prompt_tokens.push_back(prompts[i].back());
    request.prompt_ids = std::move(prompts[i]);
    if (queue) {
      request.on_token = [queue, offset](const TokenEvent& event) {
        queue->push(offset + event.index, event.text, event.token, event.logprobs);
      };
      request.on_finish = [queue, offset](const TaskOutput& output) {
        TaskOutput renumbered = output;
        renumbered.index += offset;
        queue->finish(renumbered);
      };
    }
    if (timing && i == 0) timing->attach(request, tokens);
    try {
      // n = 1 too: one choice is exactly one request (seed + 0, no fork).
      ChoicesResult part = engine.generate_choices(std::move(request));
      result.choices.insert(result.choices.end(), part.choices.begin(), part.choices.end());
    } catch (const QueueFullError& e) {
      engine.cancel(result);  // the prompts already submitted are for nobody
      response.set_header("Retry-After", "1");
      return send_error(response, ErrorKind::Overloaded, std::string(e.what()) + "; retry later");
    } catch (const std::invalid_argument& e) {  // n above --max-running, among others: 400 with the engine's words
      engine.cancel(result);
      return send_error(response, ErrorKind::InvalidRequest, e.what());
    } catch (const std::runtime_error& e) {
      engine.cancel(result);
      return send_error(response, ErrorKind::Unavailable, e.what());
    }
  }
  for (size_t i = 0; chat.logprobs >= 0 && i < choices; ++i) logprobs.emplace_back(engine.tokenizer(), last_prompt_tokens[i]);
  if (chat.stream)
    respond_stream(response, std::move(result), prompt_tokens, std::move(queue), std::move(logprobs), parsing);
  else
    respond_whole(response, result, chat.logprobs >= 0 ? last_prompt_tokens : std::vector<int>{}, echoes, chat.n,
                  parsing);
}

std::optional<std::pair<ErrorKind, std::string>> ProtocolHandler::encode_chat(const ChatRequest& chat,
                                                                              std::vector<int>& prompt,
                                                                              bool& opens_reasoning,
                                                                              bool& closes_reasoning) const {
  const int context = model_->engine->model_config().max_seq_len;
  Prompt rendered;
  try {
    rendered = model_->chat_template->render(chat.messages, ChatOptions{chat.tools, chat.chat_template_kwargs});
  } catch (const std::exception& e) {  // the model's own template refused the conversation
    return std::pair{ErrorKind::InvalidRequest, std::string("chat template: ") + e.what()};
  }
  // Bytes first: a prompt that cannot fit whatever its tokens is refused
  // without tokenizing it (which costs time, and memory that a stream of
  // oversized prompts would make the allocator hold).
  size_t text_bytes = 0;
  for (const PromptPart& part : rendered)
    if (part.kind == PromptPart::Kind::Text || part.kind == PromptPart::Kind::Rendered) text_bytes += part.text.size();
  if (const auto too_long = prompt_surely_too_long(text_bytes, model_->max_token_bytes, context))
    return std::pair{ErrorKind::ContextLength, *too_long};
  const std::string text = prompt_text(rendered);
  opens_reasoning = prompt_opens_reasoning(text);
  closes_reasoning = prompt_closes_reasoning(text);
  prompt = model_->encode(rendered);
  return std::nullopt;
}

void ProtocolHandler::respond_whole(httplib::Response& response, const ChoicesResult& result,
                                    const std::vector<int>& logprobs_after, const std::vector<std::string>& echoes,
                                    int n, const OutputParsing& parsing) const {
  // Waits in slices, looking between them whether the client is still there:
  // a client that left must not keep its task generating (and holding cache)
  // for nobody. A cancelled task ends at once with FinishReason::Cancelled.
  const auto client = ClientSocket::find(request_.local_port, request_.remote_addr, request_.remote_port);
  std::optional<std::vector<TaskOutput>> waited;
  while (!(waited = result.wait_for(kClientCheckInterval))) {
    if (client && client->closed_by_peer()) model_->engine->cancel(result);
  }
  std::vector<CompletionResult> choices;
  for (size_t i = 0; i < waited->size(); ++i) {  // in choice order
    const TaskOutput& out = (*waited)[i];
    if (const auto failure = failure_of(out)) return send_error(response, failure->first, failure->second);
    choices.push_back(completion_of(out));
    choices.back().index = int(i);  // the engine numbers each prompt's choices from 0
    if (!echoes.empty()) choices.back().text = echoes[i / size_t(n)] + choices.back().text;
    if (!logprobs_after.empty()) choices.back().logprobs_content = logprobs_content_of(*model_, logprobs_after[i], out);
    if (parsing.active()) apply_parts(choices.back(), parse_choice_output(out.text, parsing), parsing, *builder_);
  }
  response.status = 200;
  response.set_content(json_text(builder_->format_response(choices)), "application/json");
}

void ProtocolHandler::respond_stream(httplib::Response& response, ChoicesResult result, int prompt_tokens,
                                     std::shared_ptr<PieceQueue> queue, std::vector<LogprobsContent> logprobs,
                                     const OutputParsing& parsing) const {
  const size_t choices = result.choices.size();
  auto state = std::make_shared<StreamState>(StreamState{model_, builder_, std::move(queue), std::move(result),
                                                         prompt_tokens, heartbeat_, std::move(logprobs), parsing});
  if (parsing.active()) state->parsers.assign(choices, ChoiceOutputStream(parsing));
  state->tool_calls.resize(choices);
  response.status = 200;
  response.set_header("Cache-Control", "no-cache");
  auto provider = [state](size_t, httplib::DataSink& sink) { return write_stream(*state, sink); };
  // Runs when the response is destroyed: a stream that never ran to its end
  // (connection lost before or during it) must not leave its task.
  auto releaser = [state](bool success) {
    if (!success) state->model->engine->cancel(state->result);
  };
  if (request_.version == "HTTP/1.0") {
    // RFC 9112 section 6.1: no chunked encoding towards an HTTP/1.0 client.
    // The body ends where the connection does.
    response.set_header("Connection", "close");
    response.set_content_provider("text/event-stream", provider, releaser);
  } else {
    response.set_chunked_content_provider("text/event-stream", provider, releaser);
  }
}

}  // namespace astrai
