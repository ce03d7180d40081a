// The HTTP front of the engine (cpp-httplib):
//   POST /v1/chat/completions  OpenAI Chat Completions     (OpenAIResponseBuilder)
//   POST /v1/messages          Anthropic Messages           (AnthropicResponseBuilder)
//   GET  /v1/models            the served model
//   GET  /health               {"status": "ok", "model_loaded": bool}; never needs the API key
//   GET  /stats                the scheduler's counters, the KV cache's occupancy, memory used
//   GET  /metrics              the same and request latencies, for Prometheus (server_metrics.h)
//   GET  /debug/kv_blocks, POST /reset_prefix_cache   with options.debug_routes only (server_options.h)
// The listener starts before the model is loaded: until set_model(), /health
// says model_loaded false and the other routes answer 503 "Engine not
// initialized". See docs/server.md for formats and errors.
#pragma once

#include <memory>
#include <mutex>
#include <thread>

#include "server/http/connection_manager.h"
#include "server/served_model.h"
#include "server/metrics/server_metrics.h"
#include "server/protocols/response_store.h"
#include "server/server_options.h"

namespace httplib {
class Server;
struct Request;
struct Response;
class ContentReader;
}  // namespace httplib

namespace astrai {

class HttpServer {
 public:
  explicit HttpServer(ServerOptions options);
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port and serves on a background thread; returns the port
  // (the one chosen when options.port is 0). Throws std::runtime_error when
  // the address cannot be bound. Ignores SIGPIPE process-wide: a client that
  // disconnects must make a write fail, not kill the process.
  int start();
  // Closes the listening socket: no new connection is accepted, kept-alive
  // connections close after their current request, idle ones at once.
  // Returns at once.
  void stop_accepting();
  // Shuts down every open client connection (both directions): workers
  // waiting on a silent or slow client return at once. For shutdown, once
  // the engine has ended every request.
  void close_connections();
  // Stops accepting and waits for the worker threads. Open streams end when
  // their requests do: shut the engine down first to end them promptly.
  // Idempotent.
  void stop();

  // Serves `model` from now on (thread-safe).
  void set_model(std::shared_ptr<ServedModel> model);
  std::shared_ptr<ServedModel> model() const;

  int port() const { return port_; }

 private:
  void install_routes();
  void install_debug_routes();
  // False (with a 401 written in the protocol's error shape) when an API key
  // is required and the request does not carry it.
  bool authorized(const httplib::Request& request, httplib::Response& response) const;
  // Reads a POST body within options_.request_timeout; false with the
  // error status set (408 late, 413 too large, 400 broken) otherwise.
  bool read_body(const httplib::ContentReader& read, httplib::Response& response, std::string& body) const;
  // The model, or nullptr with a 503 written.
  std::shared_ptr<ServedModel> loaded_model(httplib::Response& response) const;

  const ServerOptions options_;
  const std::shared_ptr<ServerMetrics> metrics_ = std::make_shared<ServerMetrics>();
  // Responses kept for previous_response_id (nullptr when options_ keeps none).
  const std::shared_ptr<ResponseStore> responses_;
  std::unique_ptr<httplib::Server> server_;
  std::thread listener_;
  std::once_flag stop_listening_;
  // Every client connection, from httplib's accept() on (connection_manager.h).
  std::unique_ptr<ConnectionManager> connections_;
  int port_ = 0;

  mutable std::mutex model_mutex_;
  std::shared_ptr<ServedModel> model_;
};

}  // namespace astrai
