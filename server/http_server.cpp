#include "server/http_server.h"

#include <sys/socket.h>

#include <chrono>
#include <csignal>
#include <iostream>
#include <stdexcept>

#include <httplib.h>

#include "server/api_key.h"
#include "server/client_socket.h"
#include "server/json_text.h"
#include "server/protocol_handler.h"
#include "server/protocols.h"

namespace astrai {

using json = nlohmann::ordered_json;

namespace {

// httplib 0.11 listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, fixed
// when Debian compiled the library). Thirty-two clients connecting at once
// overflow it, and Linux then drops or resets some of their handshakes.
// Calling listen() again on the bound socket sets a larger backlog.
class WideBacklogServer : public httplib::Server {
 public:
  bool widen_backlog(int backlog) { return ::listen(svr_sock_, backlog) == 0; }
};

void send_json(httplib::Response& response, int status, const json& body) {
  response.status = status;
  response.set_content(json_text(body), "application/json");
}

// The most header bytes a request may carry (httplib's own limit is 8 KiB a
// line, with no limit on the number of lines). Also counted: the REMOTE_ADDR,
// REMOTE_PORT, LOCAL_ADDR and LOCAL_PORT entries httplib adds itself.
constexpr size_t kMaxHeaderBytes = 64 * 1024;

const char* status_text(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Request body too large";
    case 414: return "URI Too Long";
    case 500: return "Internal Server Error";
    default: return "HTTP error";
  }
}

json stats_json(const SchedulerStats& s, const ConnectionWatchdog::Counts& http) {
  return {{"total_tasks", s.total_tasks},
          {"total_tokens", s.total_tokens},
          {"active_tasks", s.active_tasks},
          {"waiting_queue", s.waiting_queue},
          {"steps", s.steps},
          {"prefill_tokens", s.prefill_tokens},
          {"prefix_hit_tokens", s.prefix_hit_tokens},
          {"preemptions", s.preemptions},
          {"cancel_requests", s.cancel_requests},
          {"cache",
           {{"block_tokens", s.cache.block_tokens},
            {"blocks_total", s.cache.blocks_total},
            {"blocks_held", s.cache.blocks_held},
            {"blocks_cached", s.cache.blocks_cached},
            {"blocks_free", s.cache.blocks_free},
            {"tasks", s.cache.tasks}}},
          {"http",
           {{"connections_timed_out", http.timed_out},
            {"connections_too_large", http.too_large}}}};
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

HttpServer::HttpServer(ServerOptions options) : options_(std::move(options)) {
  if (options_.threads < 1) throw std::invalid_argument("server: threads must be at least 1");
  if (options_.max_body_bytes < 1) throw std::invalid_argument("server: max_body_bytes must be at least 1");
  if (options_.read_timeout.count() < 1 || options_.request_timeout.count() < 1 ||
      options_.keep_alive_timeout.count() < 1)
    throw std::invalid_argument("server: timeouts must be at least 1 second");
  server_ = std::make_unique<WideBacklogServer>();
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

void HttpServer::request_started(const httplib::Request& request) const {
  if (watchdog_) watchdog_->request_started(request.remote_addr, request.remote_port);
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
  const auto builder = protocol.make_builder("");
  response.set_header("WWW-Authenticate", "Bearer");
  send_json(response, 401,
            builder->format_error(ErrorKind::Authentication,
                                  "missing or invalid API key: send 'Authorization: Bearer KEY' or 'x-api-key: KEY'"));
  return false;
}

void HttpServer::install_routes() {
  httplib::Server& s = *server_;
  const auto threads = size_t(options_.threads);
  s.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  s.set_payload_max_length(options_.max_body_bytes);
  s.set_read_timeout(options_.read_timeout);
  s.set_keep_alive_timeout(options_.keep_alive_timeout.count());

  // httplib 0.11 limits each header line (8 KiB), not their number. The
  // watchdog stops a head that grows past the body limit plus 1 MiB while it
  // arrives; a complete head over kMaxHeaderBytes is refused here.
  // Also refused: a body whose length is ambiguous (RFC 9112 section 6.3).
  // httplib would take one of two Content-Lengths, or the Content-Length
  // beside Transfer-Encoding; a proxy in front might take the other, and
  // read the rest as a second request of the attacker's making.
  s.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
    size_t bytes = 0;
    for (const auto& [name, value] : req.headers) bytes += name.size() + value.size() + 4;  // ": " and CRLF
    std::string refusal;
    int status = 400;
    if (bytes > kMaxHeaderBytes) {
      status = 431;
      refusal = "the request's headers take " + std::to_string(bytes) + " bytes; the limit is " +
                std::to_string(kMaxHeaderBytes);
    } else if (req.has_header("Content-Length") && req.has_header("Transfer-Encoding")) {
      refusal = "a request may not carry both Content-Length and Transfer-Encoding";
    } else {
      for (size_t i = 1; i < req.get_header_value_count("Content-Length"); ++i)
        if (req.get_header_value("Content-Length", i) != req.get_header_value("Content-Length"))
          refusal = "the request carries different Content-Length values";
    }
    if (refusal.empty()) return httplib::Server::HandlerResponse::Unhandled;
    res.set_header("Connection", "close");
    send_json(res, status, {{"detail", refusal}});
    return httplib::Server::HandlerResponse::Handled;
  });

  s.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, {{"status", "ok"}, {"model_loaded", model() != nullptr}});
  });
  s.Get("/stats", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    request_started(req);
    if (auto model = loaded_model(res))
      send_json(res, 200, stats_json(model->engine->get_stats(), watchdog_ ? watchdog_->counts() : ConnectionWatchdog::Counts{}));
  });
  s.Get("/v1/models", [this](const httplib::Request& req, httplib::Response& res) {
    request_started(req);
    if (!authorized(req, res)) return;
    if (auto model = loaded_model(res)) send_json(res, 200, models_json(*model));
  });
  // The chat routes read their bodies themselves, under a deadline (see
  // read_body); httplib would wait for a trickled body as long as each byte
  // came within the read timeout.
  for (const Protocol& protocol : protocols()) {
    s.Post(protocol.path, [this, &protocol](const httplib::Request& req, httplib::Response& res,
                                            const httplib::ContentReader& read) {
      request_started(req);
      httplib::Request with_body = req;
      if (!read_body(read, res, with_body.body)) return;
      if (!authorized(with_body, res)) return;
      auto model = loaded_model(res);
      if (!model) return;
      std::shared_ptr<ResponseBuilder> builder = protocol.make_builder(model->name);
      ProtocolHandler(with_body, model, std::move(builder), options_.stream_heartbeat).handle(res);
    });
  }

  // Statuses httplib sets itself (404 no route, 413 body too large, 400
  // malformed HTTP) get a JSON body; responses our handlers wrote keep theirs.
  // An unknown route answers 401, not 404, to a request without the key: no
  // route but /health tells an unauthenticated client anything.
  s.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
    // After these the connection's bytes can no longer be trusted to start
    // the next request (part of a body may be unread): it is closed once the
    // response is out (see the logger below).
    if (res.status == 400 || res.status == 408 || res.status == 413 || res.status == 414)
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
  // httplib calls the logger once the response is written. httplib 0.11
  // keeps a connection open whatever the response's Connection header says,
  // so a response marked "Connection: close" ends the sending direction here:
  // the client sees the response, then end of file.
  s.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    if (watchdog_) watchdog_->request_ended(req.remote_addr, req.remote_port);
    if (res.get_header_value("Connection") == "close")
      if (const auto client = ClientSocket::find(req.local_port, req.remote_addr, req.remote_port))
        client->finish_sending();
    // Method, path and status only: request and response content is never logged.
    if (options_.log_requests)
      std::cerr << "astrai serve: " << req.method << " " << req.path << " " << res.status << "\n";
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
  if (!static_cast<WideBacklogServer&>(*server_).widen_backlog(SOMAXCONN))
    throw std::runtime_error("cannot set the listen backlog on " + options_.host + ":" + std::to_string(port_));
  // A request head may take up to the whole body limit plus 1 MiB (headers)
  // before the watchdog cuts it off; httplib itself bounds only each line.
  watchdog_ = std::make_unique<ConnectionWatchdog>(port_, options_.request_timeout,
                                                   uint64_t(options_.max_body_bytes) + (uint64_t(1) << 20));
  listener_ = std::thread([this] { server_->listen_after_bind(); });
  return port_;
}

void HttpServer::stop_accepting() {
  // httplib's stop() closes the listening socket (once: a second call would
  // find it closed); its listen thread then waits for the workers, which
  // stop() below joins.
  if (listener_.joinable()) std::call_once(stop_listening_, [this] { server_->stop(); });
}

void HttpServer::close_connections() {
  if (port_ > 0)
    for (const ClientSocket& client : ClientSocket::all(port_)) client.shut_down();
}

void HttpServer::stop() {
  if (!listener_.joinable()) return;
  stop_accepting();
  listener_.join();
  watchdog_.reset();
}

}  // namespace astrai
