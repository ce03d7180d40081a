// Limits on what a client may send between requests, enforced from outside
// httplib 0.11, which bounds each read (--read-timeout) but neither the time
// nor the size of a request's head as a whole: a client sending one header
// byte every few seconds, or header lines without end, would hold a worker
// (and grow its memory) for as long as it liked.
//
// A background thread looks at the server's client connections every 250 ms
// (ClientSocket::all). A connection that no handler is serving (it is
// sending a request head, or is idle between requests) is shut down when
//   * it has been so for longer than `request_timeout` since it opened or
//     since its previous response, unless the bytes waiting to be read hold
//     a whole request head (a request waiting for a free worker is not slow),
//   * or it has sent more than `max_request_bytes` since its previous
//     response (counted by the kernel: TCP_INFO's bytes received).
// Handlers mark their connection busy (request_started) from the moment a
// request's head has been read until its response is written
// (request_ended): generation time is never counted. Bodies are bounded by
// the handlers themselves (HttpServer::read_body).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace astrai {

class ConnectionWatchdog {
 public:
  ConnectionWatchdog(int local_port, std::chrono::milliseconds request_timeout, uint64_t max_request_bytes);
  ~ConnectionWatchdog();
  ConnectionWatchdog(const ConnectionWatchdog&) = delete;
  ConnectionWatchdog& operator=(const ConnectionWatchdog&) = delete;

  // The connection from remote_addr:remote_port, as httplib names it.
  void request_started(const std::string& remote_addr, int remote_port);
  void request_ended(const std::string& remote_addr, int remote_port);

  struct Counts {
    uint64_t timed_out = 0;  // shut down for sending too slowly
    uint64_t too_large = 0;  // shut down for sending too much
  };
  Counts counts() const;

 private:
  struct Connection {
    std::chrono::steady_clock::time_point created;  // of this entry
    std::chrono::steady_clock::time_point since;    // opened, or its last response
    bool busy = false;
    bool rebase = false;     // take the next bytes_received as the new baseline
    uint64_t baseline = 0;   // bytes received up to its last response
    bool shut = false;       // shut down already (counted once)
  };
  void run();
  void look();

  const int local_port_;
  const std::chrono::milliseconds request_timeout_;
  const uint64_t max_request_bytes_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::map<std::string, Connection> connections_;  // by "ADDRESS:PORT" of the peer
  Counts counts_;
  std::thread thread_;
};

}  // namespace astrai
