// Serves one chat request over HTTP, whatever its protocol: the protocol's
// ResponseBuilder reads the body into a ChatRequest, the planner makes it a
// plan and submits it (engine/chat_planning/chat_plan.h), and this answers
// whole or as a stream of server-sent events, every byte of which the
// builder formats. What is left here is HTTP: statuses, the stream's writer,
// and noticing a client that left.
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

#include "engine/chat_planning/chat_plan.h"
#include "engine/choices_result.h"
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
  // with_logprobs: the request asked for each token's logprobs.
  void respond_whole(httplib::Response& response, const ChoicesResult& result, const ChatPlan& plan,
                     bool with_logprobs) const;
  // logprobs: one per choice, or none when the request did not ask.
  void respond_stream(httplib::Response& response, ChoicesResult result, const ChatPlan& plan,
                      std::shared_ptr<PieceQueue> queue, std::vector<LogprobsContent> logprobs) const;

  const httplib::Request& request_;
  std::shared_ptr<ServedModel> model_;
  std::shared_ptr<ResponseBuilder> builder_;
  std::chrono::milliseconds heartbeat_;
  std::shared_ptr<ServerMetrics> metrics_;
};

}  // namespace astrai
