#include "server/http_server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <iostream>
#include <stdexcept>

#include <httplib.h>

#include "server/http/api_key.h"
#include "server/http/json_text.h"
#include "server/kv_events_json.h"
#include "server/protocol_handler.h"
#include "server/protocols/protocols.h"

namespace astrai {

using json = nlohmann::ordered_json;

namespace {

// httplib's Server with two changes:
//  * httplib 0.11 listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG,
//    fixed when Debian compiled the library). Thirty-two clients connecting
//    at once overflow it, and Linux then drops or resets some of their
//    handshakes. Calling listen() again on the bound socket sets a larger one.
//  * httplib's accept loop hands each accepted socket to its task queue,
//    whose job calls the virtual process_and_close_socket(). The queue here
//    runs that job at once on the accepting thread, and the override gives
//    the socket to the ConnectionManager, which calls back serve_one()
//    (httplib's own protected process_request) for each request head it has
//    read. httplib still parses, routes and writes every response.
class ManagedServer : public httplib::Server {
 public:
  bool widen_backlog(int backlog) { return ::listen(svr_sock_, backlog) == 0; }
  void set_connections(ConnectionManager* connections) { connections_ = connections; }
  bool serve_one(httplib::Stream& stream, bool& connection_closed) {
    return process_request(stream, false, connection_closed, nullptr);
  }

 private:
  bool process_and_close_socket(socket_t sock) override {
    if (connections_) {
      connections_->adopt(sock);
    } else {
      ::shutdown(sock, SHUT_RDWR);
      ::close(sock);
    }
    return true;
  }
  ConnectionManager* connections_ = nullptr;
};

// The accepting thread's "task queue": runs the job (ManagedServer's
// process_and_close_socket, which only hands the socket over) at once.
class InlineTaskQueue final : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {}
};

void send_json(httplib::Response& response, int status, const json& body) {
  response.status = status;
  response.set_content(json_text(body), "application/json");
}

const char* status_text(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Request body too large";
    case 414: return "URI Too Long";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    default: return "HTTP error";
  }
}

// memory: where the model runs ("cuda-bf16", "cpu-reference") and the bytes
// its weights and KV cache take there (device memory on a GPU).
json stats_json(const SchedulerStats& s, const ConnectionManager::Counts& http, const InferenceEngine& engine) {
  return {{"total_tasks", s.total_tasks},
          {"total_tokens", s.total_tokens},
          {"active_tasks", s.active_tasks},
          {"waiting_queue", s.waiting_queue},
          {"steps", s.steps},
          {"prefill_tokens", s.prefill_tokens},
          {"prefix_hit_tokens", s.prefix_hit_tokens},
          {"forked_prompt_tokens", s.forked_prompt_tokens},
          {"preemptions", s.preemptions},
          {"cancel_requests", s.cancel_requests},
          {"speculative",
           {{"method", engine.speculation_method()},
            {"drafts", s.spec_drafts},
            {"draft_tokens", s.spec_draft_tokens},
            {"accepted_tokens", s.spec_accepted_tokens},
            {"accepted_per_position", s.spec_accepted_per_position}}},
          {"cache",
           {{"block_tokens", s.cache.block_tokens},
            {"blocks_total", s.cache.blocks_total},
            {"blocks_held", s.cache.blocks_held},
            {"blocks_cached", s.cache.blocks_cached},
            {"blocks_free", s.cache.blocks_free},
            {"sliding_blocks_total", s.cache.sliding_blocks_total},
            {"sliding_blocks_held", s.cache.sliding_blocks_held},
            {"sliding_blocks_cached", s.cache.sliding_blocks_cached},
            {"sliding_blocks_free", s.cache.sliding_blocks_free},
            {"tasks", s.cache.tasks}}},
          {"http",
           {{"connections_open", http.open},
            {"heads_timed_out", http.timed_out},
            {"heads_refused", http.refused}}},
          {"memory",
           {{"backend", engine.executor_name()},
            {"weights_bytes", engine.weights_bytes()},
            {"kv_cache_bytes", engine.kv_cache_bytes()},
            {"kv_cache_full_layers_bytes", engine.kv_cache_bytes() - engine.kv_cache_sliding_bytes()},
            {"kv_cache_sliding_layers_bytes", engine.kv_cache_sliding_bytes()}}}};
}

// One entry that both SDKs read: OpenAI's {id, object, created, owned_by}
// and Anthropic's {type, id, display_name, created_at}.
json models_json(const ServedModel& model) {
  const json entry = {{"id", model.name},           {"object", "model"},
                      {"created", model.created},   {"owned_by", "astrai"},
                      {"type", "model"},            {"display_name", model.name},
                      {"chat_template", model.chat_template->name()}};
  return {{"object", "list"}, {"data", json::array({entry})}, {"has_more", false},
          {"first_id", model.name}, {"last_id", model.name}};
}

}  // namespace

HttpServer::HttpServer(ServerOptions options)
    : options_(std::move(options)),
      responses_(options_.responses_store_bytes > 0 ? std::make_shared<ResponseStore>(options_.responses_store_bytes)
                                                    : nullptr) {
  if (options_.threads < 1) throw std::invalid_argument("server: threads must be at least 1");
  if (options_.max_body_bytes < 1) throw std::invalid_argument("server: max_body_bytes must be at least 1");
  if (options_.read_timeout.count() < 1 || options_.request_timeout.count() < 1 ||
      options_.keep_alive_timeout.count() < 1)
    throw std::invalid_argument("server: timeouts must be at least 1 second");
  server_ = std::make_unique<ManagedServer>();
  install_routes();
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::set_model(std::shared_ptr<ServedModel> model) {
  std::lock_guard lock(model_mutex_);
  model_ = std::move(model);
}

std::shared_ptr<ServedModel> HttpServer::model() const {
  std::lock_guard lock(model_mutex_);
  return model_;
}

std::shared_ptr<ServedModel> HttpServer::loaded_model(httplib::Response& response) const {
  auto model = this->model();
  if (!model) send_json(response, 503, {{"detail", "Engine not initialized"}});
  return model;
}

bool HttpServer::read_body(const httplib::ContentReader& read, httplib::Response& response, std::string& body) const {
  const auto deadline = std::chrono::steady_clock::now() + options_.request_timeout;
  bool late = false, too_large = false;
  const bool whole = read([&](const char* data, size_t size) {
    if (std::chrono::steady_clock::now() > deadline) {
      late = true;
      return false;
    }
    // httplib checks a Content-Length against the limit, not a chunked body.
    if (size > options_.max_body_bytes - body.size()) {
      too_large = true;
      return false;
    }
    body.append(data, size);
    return true;
  });
  if (whole) return true;
  // The rest of the body may still be on its way: the connection cannot
  // carry another request (the error handler marks it to be closed).
  if (late) {
    send_json(response, 408,
              {{"detail", "the request body did not arrive within " + std::to_string(options_.request_timeout.count()) +
                              " s of its headers"}});
  } else if (too_large) {
    response.status = 413;  // the error handler writes the body
  }
  // Otherwise httplib has set 413 (too large) or 400 (broken or stalled
  // longer than the read timeout).
  return false;
}

bool HttpServer::authorized(const httplib::Request& request, httplib::Response& response) const {
  if (options_.api_key.empty()) return true;
  if (api_key_matches(options_.api_key, request.get_header_value("Authorization"),
                      request.get_header_value("x-api-key")))
    return true;
  const Protocol& protocol = protocol_for_errors(request.path, request.has_header("anthropic-version"));
  const auto builder = protocol.make_builder("", SamplingParams{});
  response.set_header("WWW-Authenticate", "Bearer");
  send_json(response, 401,
            builder->format_error(ErrorKind::Authentication,
                                  "missing or invalid API key: send 'Authorization: Bearer KEY' or 'x-api-key: KEY'"));
  return false;
}

void HttpServer::install_routes() {
  httplib::Server& s = *server_;
  // Connections are served by the ConnectionManager's workers (start()).
  s.new_task_queue = [] { return new InlineTaskQueue; };
  s.set_payload_max_length(options_.max_body_bytes);
  s.set_read_timeout(options_.read_timeout);
  s.set_keep_alive_timeout(options_.keep_alive_timeout.count());
  // Heads are checked before httplib parses them (request_head.h): header
  // sizes (431), NUL/CR/LF in values, and ambiguous or malformed body
  // lengths (400) never reach the routes.

  s.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, {{"status", "ok"}, {"model_loaded", model() != nullptr}});
  });
  s.Get("/stats", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    if (auto model = loaded_model(res)) {
      json stats = stats_json(model->engine->get_stats(),
                              connections_ ? connections_->counts() : ConnectionManager::Counts{}, *model->engine);
      if (model->kv_events) stats["kv_events"] = kv_events_json(model->kv_events->counts());
      send_json(res, 200, stats);
    }
  });
  s.Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    const auto model = this->model();  // before it loads: the HTTP figures only
    const SchedulerStats engine = model ? model->engine->get_stats() : SchedulerStats{};
    ServerMetrics::Served served;
    if (model) {
      served.loaded_at = model->created;
      if (model->kv_events) served.kv_events = model->kv_events->counts();
    }
    res.set_content(metrics_->render(model ? &engine : nullptr,
                                     connections_ ? connections_->counts() : ConnectionManager::Counts{},
                                     model ? &served : nullptr),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  if (options_.debug_routes) install_debug_routes();
  s.Get("/v1/models", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    if (auto model = loaded_model(res)) send_json(res, 200, models_json(*model));
  });
  // The chat routes read their bodies themselves, under a deadline (see
  // read_body); httplib would wait for a trickled body as long as each byte
  // came within the read timeout.
  for (const Protocol& protocol : protocols()) {
    s.Post(protocol.path, [this, &protocol](const httplib::Request& req, httplib::Response& res,
                                            const httplib::ContentReader& read) {
      httplib::Request with_body = req;
      if (!read_body(read, res, with_body.body)) return;
      if (!authorized(with_body, res)) return;
      auto model = loaded_model(res);
      if (!model) return;
      std::shared_ptr<ResponseBuilder> builder = protocol.make_builder(model->name, model->default_sampling);
      builder->set_response_store(responses_);
      ProtocolHandler(with_body, model, std::move(builder), options_.stream_heartbeat, metrics_).handle(res);
    });
  }

  // A stored response (ResponseStore), as OpenAI's GET and DELETE /v1/responses/{id} answer.
  const auto no_response = [](httplib::Response& res, const std::string& id) {
    send_json(res, 404, {{"error", {{"message", "No response found with id '" + id + "'."},
                                    {"type", "invalid_request_error"},
                                    {"param", nullptr},
                                    {"code", nullptr}}}});
  };
  s.Get(R"(/v1/responses/([A-Za-z0-9_\-]{1,200}))", [this, no_response](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    const std::string id = req.matches[1];
    const auto stored = responses_ ? responses_->get(id) : std::nullopt;
    if (!stored) return no_response(res, id);
    send_json(res, 200, stored->response);
  });
  s.Delete(R"(/v1/responses/([A-Za-z0-9_\-]{1,200}))", [this, no_response](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    const std::string id = req.matches[1];
    if (!responses_ || !responses_->erase(id)) return no_response(res, id);
    send_json(res, 200, {{"id", id}, {"object", "response"}, {"deleted", true}});
  });

  // Statuses httplib sets itself (404 no route, 413 body too large, 400
  // malformed HTTP) get a JSON body; responses our handlers wrote keep theirs.
  // An unknown route answers 401, not 404, to a request without the key: no
  // route but /health tells an unauthenticated client anything.
  s.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
    // After these the connection's bytes can no longer be trusted to start
    // the next request (part of a body may be unread): it is closed once the
    // response is out (see the logger below).
    if (res.status == 400 || res.status == 408 || res.status == 413 || res.status == 414 || res.status == 431)
      res.set_header("Connection", "close");
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    if (res.status == 404 && !authorized(req, res)) return httplib::Server::HandlerResponse::Handled;
    std::string detail = status_text(res.status);
    if (res.status == 413) detail += " (the limit is " + std::to_string(options_.max_body_bytes) + " bytes)";
    send_json(res, res.status, {{"detail", detail}});
    return httplib::Server::HandlerResponse::Handled;
  }));
  s.set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr error) {
    std::string what = "unknown exception";
    try {
      if (error) std::rethrow_exception(error);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    std::cerr << "astrai serve: internal error on " << req.method << " " << req.path << ": " << what << "\n";
    send_json(res, 500, {{"detail", "Internal server error"}});
  });
  // httplib calls this for every response it writes, with its final status
  // (after the error handler), just before writing it.
  s.set_post_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    metrics_->count_response(req.path, res.status);
  });
  // httplib calls the logger once the response is written, on the thread
  // that wrote it. httplib 0.11 would keep a connection open whatever the
  // response's Connection header says; a response marked "Connection: close"
  // tells the ConnectionManager to end the connection after it.
  s.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    if (res.get_header_value("Connection") == "close") ConnectionManager::close_after_response();
    // Method, path and status only: request and response content is never logged.
    if (options_.log_requests)
      std::cerr << "astrai serve: " << req.method << " " << req.path << " " << res.status << "\n";
  });
}

// Both read or change the cache on the scheduler's thread, between two steps.
void HttpServer::install_debug_routes() {
  server_->Get("/debug/kv_blocks", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    if (auto model = loaded_model(res)) send_json(res, 200, kv_blocks_json(*model));
  });
  server_->Post("/reset_prefix_cache", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    auto model = loaded_model(res);
    if (!model) return;
    if (model->engine->reset_prefix_cache())
      send_json(res, 200, {{"reset", true}});
    else
      send_json(res, 409, {{"reset", false}, {"detail", "requests hold KV cache blocks; reset when idle"}});
  });
}

int HttpServer::start() {
  if (listener_.joinable()) throw std::logic_error("server: start() called twice");
  std::signal(SIGPIPE, SIG_IGN);
  if (options_.port == 0) {
    port_ = server_->bind_to_any_port(options_.host);
    if (port_ < 0) throw std::runtime_error("cannot listen on " + options_.host + " (any port)");
  } else {
    if (!server_->bind_to_port(options_.host, options_.port))
      throw std::runtime_error("cannot listen on " + options_.host + ":" + std::to_string(options_.port) +
                               " (in use, or not an address of this machine)");
    port_ = options_.port;
  }
  auto& managed = static_cast<ManagedServer&>(*server_);
  if (!managed.widen_backlog(SOMAXCONN))
    throw std::runtime_error("cannot set the listen backlog on " + options_.host + ":" + std::to_string(port_));
  ConnectionLimits limits;
  limits.read_timeout = options_.read_timeout;
  limits.request_timeout = options_.request_timeout;
  limits.keep_alive_timeout = options_.keep_alive_timeout;
  limits.write_timeout = std::chrono::seconds(5);  // httplib's default, as before
  limits.max_body_bytes = options_.max_body_bytes;
  limits.threads = options_.threads;
  limits.log_refusals = options_.log_requests;
  connections_ = std::make_unique<ConnectionManager>(
      limits, [&managed](httplib::Stream& stream, bool& closed) { return managed.serve_one(stream, closed); });
  managed.set_connections(connections_.get());
  listener_ = std::thread([this] { server_->listen_after_bind(); });
  return port_;
}

void HttpServer::stop_accepting() {
  // httplib's stop() closes the listening socket (once: a second call would
  // find it closed); its listen thread then waits for the workers, which
  // stop() below joins.
  if (listener_.joinable()) std::call_once(stop_listening_, [this] { server_->stop(); });
  if (connections_) connections_->stop_keeping_alive();
}

void HttpServer::close_connections() {
  if (connections_) connections_->shut_down_all();
}

void HttpServer::stop() {
  if (!listener_.joinable()) return;
  stop_accepting();
  listener_.join();
  connections_->stop();
}

}  // namespace astrai
