// How the HTTP server listens and what it accepts (`astrai serve` options).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace astrai {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;                           // 0 = any free port (HttpServer::start returns it)
  std::string api_key;                       // "" = no authentication
  size_t max_body_bytes = 4 * 1024 * 1024;   // larger request bodies get 413
  int threads = 64;                          // httplib workers; each open stream holds one
  bool log_requests = true;                  // method, path, status per request (never content)
  std::chrono::milliseconds stream_heartbeat{1000};  // idle time before a stream writes an SSE comment
  // GET /debug/kv_blocks (the prefix cache's registered blocks) and POST
  // /reset_prefix_cache, as vLLM serves the latter in its dev mode: for
  // tests and operators, never needed to serve (`astrai serve --debug-routes`).
  bool debug_routes = false;
  // Slow or silent clients (see docs/reliability.md). A client whose request
  // bytes stop arriving for read_timeout is dropped; a request body must
  // arrive whole within request_timeout of its headers (else 408), so that
  // a body trickled a byte at a time cannot hold a worker for ever; an idle
  // kept-alive connection is closed after keep_alive_timeout.
  std::chrono::seconds read_timeout{10};
  std::chrono::seconds request_timeout{30};
  std::chrono::seconds keep_alive_timeout{5};
  // The Responses API's stored responses (previous_response_id, GET and
  // DELETE /v1/responses/{id}), in bytes of their JSON, least recently used
  // out first (server/protocols/response_store.h); 0 keeps none.
  size_t responses_store_bytes = size_t(64) << 20;
};

}  // namespace astrai
