// Serves one chat request, whatever its protocol: parses the body, has the
// protocol's ResponseBuilder read it, builds the prompt with the model's chat
// template, submits it to the engine, and answers whole or as a stream of
// server-sent events, every byte of which the builder formats.
//
// Streams: the request's on_token callback feeds a PieceQueue that this
// request's HTTP worker thread drains (never the scheduler thread). A write
// that fails (the client went away, or stopped reading for the write
// timeout) cancels the engine task, which frees its cache; while no text
// comes, an SSE comment is written every `heartbeat` so a departed client is
// noticed even before the first token.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/choices_result.h"
#include "engine/chat_planning/choice_output.h"
#include "server/protocols/logprobs_content.h"
#include "server/protocols/response_builder.h"
#include "server/served_model.h"
#include "server/metrics/server_metrics.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace astrai {

class PieceQueue;

class ProtocolHandler {
 public:
  ProtocolHandler(const httplib::Request& request, std::shared_ptr<ServedModel> model,
                  std::shared_ptr<ResponseBuilder> builder,
                  std::chrono::milliseconds heartbeat = std::chrono::milliseconds(1000),
                  std::shared_ptr<ServerMetrics> metrics = nullptr);  // null: nothing recorded

  // Fills the response: 200 (JSON or an event stream), 422 for a body that
  // is not valid JSON or fails validation, 400 for a prompt longer than the
  // context, 503 with Retry-After when the engine's queue is full.
  void handle(httplib::Response& response);

 private:
  void send_error(httplib::Response& response, ErrorKind kind, const std::string& message) const;
  // A chat request's prompt (its messages through the chat template), or
  // the error to answer with.
  // opens_reasoning: whether the prompt ends inside <think>; closes_reasoning:
  // whether it ends with a closed think block (engine/chat/reasoning_split.h).
  std::optional<std::pair<ErrorKind, std::string>> encode_chat(const ChatRequest& chat, std::vector<int>& prompt,
                                                               bool& opens_reasoning, bool& closes_reasoning) const;
  // logprobs_after: each choice's prompt's last token when the request asked
  // for logprobs (else empty); echoes: each prompt's text when a completions
  // request asked for echo (else empty); n: choices per prompt.
  void respond_whole(httplib::Response& response, const ChoicesResult& result, const std::vector<int>& logprobs_after,
                     const std::vector<std::string>& echoes, int n, const OutputParsing& parsing) const;
  // logprobs: one per choice, or none when the request did not ask.
  void respond_stream(httplib::Response& response, ChoicesResult result, int prompt_tokens,
                      std::shared_ptr<PieceQueue> queue, std::vector<LogprobsContent> logprobs,
                      const OutputParsing& parsing) const;

  const httplib::Request& request_;
  std::shared_ptr<ServedModel> model_;
  std::shared_ptr<ResponseBuilder> builder_;
  std::chrono::milliseconds heartbeat_;
  std::shared_ptr<ServerMetrics> metrics_;
};

}  // namespace astrai
