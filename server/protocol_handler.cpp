#include "server/protocol_handler.h"

#include <algorithm>

#include <httplib.h>

#include "engine/chat_planning/chat_plan.h"
#include "engine/scheduler/inference_scheduler.h"
#include "server/protocols/chat_request_parser.h"
#include "server/http/connection_manager.h"
#include "server/http/json_text.h"
#include "server/protocols/logprobs_content.h"
#include "server/http/piece_queue.h"
#include "server/http/sse.h"

namespace astrai {

using json = nlohmann::ordered_json;

namespace {

// How often a non-streamed request looks whether its client is still there.
constexpr std::chrono::milliseconds kClientCheckInterval{250};

// Everything a stream needs after the handler has returned.
struct StreamState {
  std::shared_ptr<ServedModel> model;
  std::shared_ptr<ResponseBuilder> builder;
  std::shared_ptr<PieceQueue> queue;
  ChoicesResult result;
  std::chrono::milliseconds heartbeat;
  std::vector<LogprobsContent> logprobs;  // one per choice, when the request asked for them
  ChatPlan plan;                          // its requests submitted: how outputs are read and counted
  std::vector<ChoiceOutputStream> parsers;        // one per choice, when parsing.active()
  std::vector<std::vector<ToolCall>> tool_calls;  // each choice's calls so far
};

// A parsed piece of choice `index`'s output, as the builder writes it:
// reasoning, then content (with the logprobs of the tokens that made the
// piece), then the calls' pieces: a call's start (its id made here), the
// arguments as they grow, its end.
std::string format_parts(StreamState& s, int index, ChoiceStreamPart parts, const json& logprobs) {
  std::string out = s.builder->format_reasoning_chunk(index, parts.reasoning);
  if (!parts.content.empty() || !logprobs.is_null()) out += s.builder->format_chunk(index, parts.content, logprobs);
  std::vector<ToolCall>& calls = s.tool_calls[size_t(index)];
  for (ToolCallPiece& piece : parts.calls) {
    if (!piece.name.empty()) {
      calls.push_back(tool_call_of(s.plan.parsing, {std::move(piece.name), ""}, s.builder->tool_call_id_prefix()));
      out += s.builder->format_tool_call_start(index, int(calls.size()) - 1, calls.back());
    }
    if (calls.empty()) continue;  // ToolCallStream names every call first: not reached
    if (!piece.arguments.empty()) {
      calls.back().arguments += piece.arguments;
      out += s.builder->format_tool_call_arguments(index, int(calls.size()) - 1, calls.back(), piece.arguments);
    }
    if (piece.ends) out += s.builder->format_tool_call_end(index, int(calls.size()) - 1, calls.back());
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
  s.builder->set_output_parsing(s.plan.parsing.active());
  if (!send(s.builder->format_stream_start(s.plan.prompt_tokens))) return abandon();
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
        const std::string bytes = s.plan.parsing.active()
                                      ? format_parts(s, piece.index, s.parsers[size_t(piece.index)].feed(piece.text), content)
                                      : s.builder->format_chunk(piece.index, piece.text, content);
        if (!bytes.empty() && !send(bytes)) return abandon();
        text_sent = text_sent || !piece.text.empty();
      }
      if (!piece.output) continue;
      if (const auto failure = failure_of(*piece.output)) {
        cancel_running_choices(s, piece.index);  // the response failed: they are for nobody
        if (!send(s.builder->format_stream_error(failure->kind(), failure->what()))) return false;
        sink.done();
        return true;
      }
      if (s.plan.parsing.active()) {  // what the parsers held back
        const std::string rest = format_parts(s, piece.index, s.parsers[size_t(piece.index)].finish(), json(nullptr));
        if (!rest.empty() && !send(rest)) return abandon();
      }
      ended.push_back(completion_of(*piece.output));
      ended.back().reasoning_tokens = reasoning_tokens_of(s.plan, *piece.output);
      if (s.plan.parsing.active()) ended.back().tool_calls = s.tool_calls[size_t(piece.index)];
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
  InferenceEngine& engine = *model_->engine;
  ParsedChatRequest parsed = parse_chat_request(*builder_, request_.body, engine.model_config().vocab_size);
  if (!parsed.ok()) {
    response.status = parsed.status;
    response.set_content(json_text(parsed.error_body), "application/json");
    return;
  }
  const bool stream = parsed.request->stream;
  const int logprobs = parsed.request->logprobs;
  ChatPlan plan;
  try {
    plan = plan_chat(std::move(*parsed.request), *model_);
  } catch (const ChatError& e) {
    return send_error(response, e.kind(), e.what());
  }
  std::shared_ptr<PieceQueue> queue;
  if (stream) {
    queue = std::make_shared<PieceQueue>(int(plan.choices()));
    // Echoed prompts are each choice's first text.
    for (size_t c = 0; c < plan.echoes.size() * size_t(plan.n); ++c) queue->push(int(c), plan.echoes[c / size_t(plan.n)]);
    route_choice_events(plan, {[queue](const TokenEvent& e) { queue->push(e.index, e.text, e.token, e.logprobs); },
                               [queue](const TaskOutput& output) { queue->finish(output); }});
  }
  if (timing) timing->attach(plan.requests.front(), plan.prompt_tokens);  // wraps the callbacks
  ChoicesResult result;
  try {
    result = submit_plan(engine, plan);
  } catch (const QueueFullError& e) {
    response.set_header("Retry-After", "1");
    return send_error(response, ErrorKind::Overloaded, std::string(e.what()) + "; retry later");
  } catch (const std::invalid_argument& e) {  // n above --max-running, among others: 400 with the engine's words
    return send_error(response, ErrorKind::InvalidRequest, e.what());
  } catch (const std::runtime_error& e) {
    return send_error(response, ErrorKind::Unavailable, e.what());
  }
  if (stream) {
    std::vector<LogprobsContent> entries;  // each choice's entries start after its prompt's last token
    for (size_t i = 0; logprobs >= 0 && i < plan.choices(); ++i)
      entries.emplace_back(engine.tokenizer(), plan.last_prompt_tokens[i]);
    respond_stream(response, std::move(result), plan, std::move(queue), std::move(entries));
  } else {
    respond_whole(response, result, plan, logprobs >= 0);
  }
}

void ProtocolHandler::respond_whole(httplib::Response& response, const ChoicesResult& result, const ChatPlan& plan,
                                    bool with_logprobs) const {
  // Waits in slices, looking between them whether the client is still there:
  // a client that left must not keep its task generating (and holding cache)
  // for nobody. A cancelled task ends at once with FinishReason::Cancelled.
  std::optional<std::vector<TaskOutput>> waited;
  while (!(waited = result.wait_for(kClientCheckInterval))) {
    if (ConnectionManager::client_gone()) model_->engine->cancel(result);
  }
  std::vector<CompletionResult> choices;
  for (size_t i = 0; i < waited->size(); ++i) {  // in choice order
    const TaskOutput& out = (*waited)[i];
    if (const auto failure = failure_of(out)) return send_error(response, failure->kind(), failure->what());
    choices.push_back(choice_result(plan, out, int(i), builder_->tool_call_id_prefix()));
    if (with_logprobs) choices.back().logprobs_content = logprobs_content_of(*model_, plan.last_prompt_tokens[i], out);
  }
  response.status = 200;
  response.set_content(json_text(builder_->format_response(choices)), "application/json");
}

void ProtocolHandler::respond_stream(httplib::Response& response, ChoicesResult result, const ChatPlan& plan,
                                     std::shared_ptr<PieceQueue> queue, std::vector<LogprobsContent> logprobs) const {
  const size_t choices = result.choices.size();
  auto state = std::make_shared<StreamState>(StreamState{model_, builder_, std::move(queue), std::move(result),
                                                         heartbeat_, std::move(logprobs), plan, {}, {}});
  if (plan.parsing.active()) state->parsers.assign(choices, ChoiceOutputStream(plan.parsing));
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
