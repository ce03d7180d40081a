// The server's client connections, between httplib's accept() and httplib's
// request processing.
//
// httplib 0.11 hands each accepted socket to a worker thread at once, and the
// worker keeps it for the connection's life: waiting for the first request,
// for each next one (keep-alive), and while a head trickles in. 200 silent
// connections therefore starved 64 workers. It also reads each request
// through a fresh 4 KiB buffer that dies with the request, so bytes of a
// pipelined next request read along with this one were lost.
//
// Here a connection holds a worker only while a request it has sent in full
// head is being served:
//   * one thread waits (epoll) on every connection that is between requests
//     or still sending a head. It reads what arrives into the connection's
//     own buffer and, once the buffer holds a whole head (request_head.h),
//     checks it: refused heads get their 4xx from this thread (a few hundred
//     bytes, written without blocking) and the connection is closed after a
//     short linger; accepted ones go to the worker queue. It closes
//     connections silent for the keep-alive timeout, heads stalled for the
//     read timeout or slower in all than the request timeout (408);
//   * `threads` workers run httplib's request processing (parsing, routing,
//     the handlers, writing the response) on a Stream that reads from the
//     connection's buffer first, so pipelined requests are answered in
//     order. After a response the worker goes on with the next head if one
//     is already buffered, and otherwise gives the connection back to the
//     waiting thread;
//   * after a response marked "Connection: close" (or to an HTTP/1.0
//     request without keep-alive) the connection's sending side is shut and
//     the waiting thread discards what the client still sends for up to
//     2 s before closing: closing with unread bytes would make the kernel
//     reset the connection, which can destroy the answer before the client
//     reads it.
// An idle connection costs its socket, one epoll entry and one Connection
// (about 200 bytes with its map entry; its buffer is empty), no thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

namespace httplib {
class Stream;
}

namespace astrai {

struct ConnectionLimits {
  std::chrono::milliseconds read_timeout{10000};        // a head's bytes may pause this long
  std::chrono::milliseconds request_timeout{30000};     // a whole head must arrive within this
  std::chrono::milliseconds keep_alive_timeout{5000};   // silence before the first byte of a head
  std::chrono::milliseconds write_timeout{5000};        // a write may wait this long for the client
  size_t max_body_bytes = 4 * 1024 * 1024;              // a larger Content-Length is refused (413)
  int threads = 64;
  bool log_refusals = true;                             // "astrai serve: refused STATUS" on stderr
};

class ConnectionManager {
 public:
  // serve(stream, connection_closed) processes one request whose head is in
  // the stream's buffer and writes its response; false when the connection
  // failed. It sets connection_closed when the request asked for the
  // connection to end.
  using ServeOne = std::function<bool(httplib::Stream&, bool& connection_closed)>;

  ConnectionManager(ConnectionLimits limits, ServeOne serve);
  ~ConnectionManager();  // stop()
  ConnectionManager(const ConnectionManager&) = delete;
  ConnectionManager& operator=(const ConnectionManager&) = delete;

  // Takes an accepted socket (and closes it in the end).
  void adopt(int fd);
  // Shuts down every connection (both directions): workers waiting on a
  // client return at once. For shutdown.
  void shut_down_all();
  // From now on connections end after their current request, and idle ones
  // are closed (the listener has stopped: shutdown has begun).
  void stop_keeping_alive() { draining_ = true; }
  // Closes every waiting connection, lets workers finish the request they
  // serve, and joins all threads. Idempotent.
  void stop();

  // Called by a handler's thread (the logger) once its response is written:
  // the connection ends after it (the response said "Connection: close").
  static void close_after_response();
  // Called by a handler on the worker thread serving its request: whether
  // that request's client has closed its end (end of file, or an error such
  // as a reset, is waiting on the socket). Bytes waiting (a pipelined next
  // request) or none mean it is still there; a client that only half-closes
  // after sending its request counts as gone, as in other servers that poll
  // for this. A handler waiting for a non-streamed generation asks, so that
  // a client that left does not keep its task generating (httplib 0.11 hands
  // handlers no socket, and writes nothing that could fail until the end).
  // False on any other thread.
  static bool client_gone();

  struct Counts {
    uint64_t open = 0;       // connections open now
    uint64_t timed_out = 0;  // heads refused with 408 (stalled, or slower than the request timeout)
    uint64_t refused = 0;    // heads refused with 400, 413, 414 or 431
  };
  Counts counts() const;

 private:
  struct Connection;
  void run_waiter();
  void run_worker();
  void serve(std::unique_ptr<Connection> c);
  // On the waiting thread: reads what arrived; false when the connection is done.
  void on_readable(Connection& c, std::vector<std::unique_ptr<Connection>>& ready);
  void refuse(Connection& c, int status, const std::string& detail);
  void start_waiting(std::unique_ptr<Connection> c);  // from any thread
  void release(std::unique_ptr<Connection> c);        // closes its socket

  const ConnectionLimits limits_;
  const ServeOne serve_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: new or returned connections, or stop

  mutable std::mutex mutex_;
  std::condition_variable work_ready_;
  std::deque<std::unique_ptr<Connection>> work_;      // heads ready for a worker
  std::vector<std::unique_ptr<Connection>> arriving_; // for the waiting thread
  std::set<int> open_;                                // every connection's socket
  bool stopping_ = false;
  std::atomic<bool> draining_{false};
  Counts counts_;

  // Owned by the waiting thread.
  std::unordered_map<int, std::unique_ptr<Connection>> waiting_;

  std::thread waiter_;
  std::vector<std::thread> workers_;
  std::once_flag stopped_;
};

}  // namespace astrai
