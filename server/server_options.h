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
};

}  // namespace astrai
