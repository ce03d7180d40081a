#include "server/http/connection_manager.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "server/http/request_head.h"

namespace astrai {

namespace {

using Clock = std::chrono::steady_clock;

// How often the waiting thread looks at its connections' deadlines.
constexpr std::chrono::milliseconds kSweepInterval{100};
// How long a connection being closed after an answer still reads (and
// discards) what its client sends, so that the close is not a reset.
constexpr std::chrono::milliseconds kLinger{2000};

thread_local bool tls_close_after_response = false;
// The socket of the request this worker thread is serving (-1 between
// requests): what client_gone() looks at.
thread_local int tls_client_fd = -1;

const char* reason_phrase(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 431: return "Request Header Fields Too Large";
    default: return "Error";
  }
}

// Waits up to `timeout` for `events` on fd; true when they came.
bool wait_for(int fd, short events, std::chrono::milliseconds timeout) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int n = poll(&p, 1, int(timeout.count()));
    if (n < 0 && errno == EINTR) continue;
    return n > 0 && (p.revents & (events | POLLHUP | POLLERR)) != 0;
  }
}

void address_of(const sockaddr_storage& a, std::string& ip, int& port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(a);
    inet_ntop(AF_INET, &v4.sin_addr, text, sizeof text);
    port = ntohs(v4.sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(a);
    inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof text);
    port = ntohs(v6.sin6_port);
  }
  ip = text;
}

}  // namespace

struct ConnectionManager::Connection {
  enum class State { Head, Closing };
  int fd = -1;
  State state = State::Head;
  std::string buffer;     // received, not yet consumed: bytes [offset, size)
  size_t offset = 0;
  Clock::time_point since;      // opened, or its previous response was written
  Clock::time_point last_byte;  // the last bytes of this head arrived
  Clock::time_point linger_until;

  std::string_view unread() const { return std::string_view(buffer).substr(offset); }
  void compact() {
    buffer.erase(0, offset);
    offset = 0;
    if (buffer.empty()) buffer.shrink_to_fit();  // an idle connection holds no buffer
  }
};

namespace {

// httplib's view of a connection: reads come from the connection's buffer
// first (bytes read earlier by the waiting thread, or past the end of the
// previous request), then from the socket, each read waiting at most the
// read timeout; writes wait at most the write timeout.
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(std::string& buffer, size_t& offset, int fd, std::chrono::milliseconds read_timeout,
                   std::chrono::milliseconds write_timeout)
      : buffer_(buffer), offset_(offset), fd_(fd), read_timeout_(read_timeout), write_timeout_(write_timeout) {}

  bool is_readable() const override { return offset_ < buffer_.size() || wait_for(fd_, POLLIN, read_timeout_); }

  // Like httplib's SocketStream: peer still there and room to write.
  bool is_writable() const override {
    if (!wait_for(fd_, POLLOUT, write_timeout_)) return false;
    char byte;
    const ssize_t n = recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
  }

  ssize_t read(char* ptr, size_t size) override {
    if (offset_ < buffer_.size()) {
      const size_t n = std::min(size, buffer_.size() - offset_);
      std::memcpy(ptr, buffer_.data() + offset_, n);
      offset_ += n;
      return ssize_t(n);
    }
    // Large reads (bodies) go straight to the caller, which consumes them
    // all; small ones (httplib reads heads a byte at a time) through the
    // buffer, where bytes past this request stay for the next one. httplib
    // takes 0 for end of file, so a spurious EAGAIN is waited out.
    const bool direct = size >= kChunk;
    if (!direct) {
      buffer_.clear();
      offset_ = 0;
      buffer_.resize(kChunk);
    }
    ssize_t n;
    do {
      if (!wait_for(fd_, POLLIN, read_timeout_)) {
        n = -1;
        break;
      }
      n = recv(fd_, direct ? ptr : buffer_.data(), direct ? size : kChunk, MSG_DONTWAIT);
    } while (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
    if (direct) return n;
    buffer_.resize(n > 0 ? size_t(n) : 0);
    return n <= 0 ? n : read(ptr, size);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!wait_for(fd_, POLLOUT, write_timeout_)) return -1;
    const ssize_t n = send(fd_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage a{};
    socklen_t size = sizeof a;
    if (getpeername(fd_, reinterpret_cast<sockaddr*>(&a), &size) == 0) address_of(a, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage a{};
    socklen_t size = sizeof a;
    if (getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &size) == 0) address_of(a, ip, port);
  }
  int socket() const override { return fd_; }

 private:
  static constexpr size_t kChunk = 4096;
  std::string& buffer_;
  size_t& offset_;
  int fd_;
  std::chrono::milliseconds read_timeout_, write_timeout_;
};

}  // namespace

void ConnectionManager::close_after_response() { tls_close_after_response = true; }

bool ConnectionManager::client_gone() {
  if (tls_client_fd < 0) return false;
  char byte;
  const ssize_t n = recv(tls_client_fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return true;
  if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
  return false;
}

ConnectionManager::ConnectionManager(ConnectionLimits limits, ServeOne serve)
    : limits_(limits), serve_(std::move(serve)) {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) throw std::runtime_error("server: cannot create epoll or eventfd descriptors");
  epoll_event e{};
  e.events = EPOLLIN;
  e.data.fd = wake_fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &e);
  waiter_ = std::thread([this] { run_waiter(); });
  for (int i = 0; i < limits_.threads; ++i) workers_.emplace_back([this] { run_worker(); });
}

ConnectionManager::~ConnectionManager() {
  stop();
  close(epoll_fd_);
  close(wake_fd_);
}

void ConnectionManager::adopt(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  auto c = std::make_unique<Connection>();
  c->fd = fd;
  c->since = c->last_byte = Clock::now();
  {
    std::lock_guard lock(mutex_);
    open_.insert(fd);
  }
  start_waiting(std::move(c));
}

void ConnectionManager::start_waiting(std::unique_ptr<Connection> c) {
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      arriving_.push_back(std::move(c));
      const uint64_t one = 1;
      [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof one);
      return;
    }
  }
  release(std::move(c));
}

void ConnectionManager::release(std::unique_ptr<Connection> c) {
  {
    std::lock_guard lock(mutex_);
    open_.erase(c->fd);
  }
  close(c->fd);
}

void ConnectionManager::shut_down_all() {
  std::lock_guard lock(mutex_);
  for (int fd : open_) shutdown(fd, SHUT_RDWR);
}

ConnectionManager::Counts ConnectionManager::counts() const {
  std::lock_guard lock(mutex_);
  Counts c = counts_;
  c.open = open_.size();
  return c;
}

void ConnectionManager::stop() {
  std::call_once(stopped_, [this] {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    work_ready_.notify_all();
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof one);
    waiter_.join();
    for (std::thread& t : workers_) t.join();
  });
}

void ConnectionManager::refuse(Connection& c, int status, const std::string& detail) {
  const std::string summary = request_line_summary(c.unread());
  const std::string body = nlohmann::json{{"detail", detail}}.dump();
  const std::string answer = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) +
                             "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                             "\r\nConnection: close\r\n\r\n" + body;
  // At most a few hundred bytes on a connection whose previous answer, if
  // any, was written: it fits the socket's send buffer unless the client has
  // stopped reading, and then it is dropped with the connection.
  [[maybe_unused]] const ssize_t n = send(c.fd, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  shutdown(c.fd, SHUT_WR);
  c.state = Connection::State::Closing;
  c.linger_until = Clock::now() + kLinger;
  c.buffer.clear();
  c.buffer.shrink_to_fit();
  c.offset = 0;
  {
    std::lock_guard lock(mutex_);
    ++(status == 408 ? counts_.timed_out : counts_.refused);
  }
  // Method, path and status, as for other requests: never the detail, which
  // may quote what the client sent.
  if (limits_.log_refusals) std::cerr << "astrai serve: " + summary + " " + std::to_string(status) + "\n";
}

void ConnectionManager::on_readable(Connection& c, std::vector<std::unique_ptr<Connection>>& ready) {
  char chunk[16384];
  bool ended = false;  // the client closed its sending side
  for (;;) {
    // A head is read up to kMaxHeadBytes and one more byte (to tell that it
    // is too large); bytes beyond are left to the worker's reads.
    size_t room = sizeof chunk;
    if (c.state == Connection::State::Head) {
      const size_t held = c.buffer.size() - c.offset;
      if (held > kMaxHeadBytes) break;
      room = std::min(room, kMaxHeadBytes + 1 - held);
    }
    const ssize_t n = recv(c.fd, chunk, room, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n < 0) {  // reset
      c.state = Connection::State::Closing;
      c.linger_until = Clock::now();
      return;
    }
    if (n == 0) {
      ended = true;
      break;
    }
    if (c.state == Connection::State::Closing) continue;  // discarded
    c.buffer.append(chunk, size_t(n));
    c.last_byte = Clock::now();
  }
  auto close_now = [&] {
    c.state = Connection::State::Closing;
    c.linger_until = Clock::now();
  };
  if (c.state != Connection::State::Head) {
    if (ended) close_now();
    return;
  }
  // A whole head is served even when the client has closed its sending side
  // after it (it may still read the answer).
  if (const auto length = request_head_length(c.unread())) {
    const HeadVerdict verdict = check_request_head(c.unread().substr(0, *length), limits_.max_body_bytes);
    if (verdict.status != 0) return refuse(c, verdict.status, verdict.detail);
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
    auto it = waiting_.find(c.fd);
    ready.push_back(std::move(it->second));
    waiting_.erase(it);
    return;
  }
  if (c.unread().size() > kMaxHeadBytes)
    refuse(c, 431, "the request head takes more than " + std::to_string(kMaxHeadBytes) +
                       " bytes without ending: its headers are over the limit (the limit is " +
                       std::to_string(kMaxHeaderBytes) + " bytes of headers)");
  else if (ended)
    close_now();
}

void ConnectionManager::run_waiter() {
  std::vector<epoll_event> events(256);
  auto next_sweep = Clock::now() + kSweepInterval;
  for (;;) {
    const int n = epoll_wait(epoll_fd_, events.data(), int(events.size()), int(kSweepInterval.count()));
    std::vector<std::unique_ptr<Connection>> ready;
    for (int i = 0; i < n; ++i) {
      const int fd = events[size_t(i)].data.fd;
      if (fd == wake_fd_) {
        uint64_t count;
        [[maybe_unused]] const ssize_t r = ::read(wake_fd_, &count, sizeof count);
        continue;
      }
      const auto it = waiting_.find(fd);
      if (it != waiting_.end()) on_readable(*it->second, ready);
    }
    std::vector<std::unique_ptr<Connection>> arrived;
    bool stopping;
    {
      std::lock_guard lock(mutex_);
      arrived.swap(arriving_);
      stopping = stopping_;
    }
    for (auto& c : arrived) {
      const int fd = c->fd;
      Connection& added = *waiting_.emplace(fd, std::move(c)).first->second;
      epoll_event e{};
      e.events = EPOLLIN | EPOLLRDHUP;
      e.data.fd = fd;
      epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &e);
      // A connection given back with bytes of its next head already read.
      if (added.state == Connection::State::Head && !added.unread().empty()) on_readable(added, ready);
    }
    if (stopping) break;

    const auto now = Clock::now();
    if (now >= next_sweep) {
      next_sweep = now + kSweepInterval;
      const bool draining = draining_.load();
      for (auto& [fd, c] : waiting_) {
        if (c->state == Connection::State::Closing) continue;
        if (c->unread().empty()) {
          if (now - c->since > limits_.keep_alive_timeout || draining) {
            c->state = Connection::State::Closing;
            c->linger_until = now;
          }
        } else if (now - c->last_byte > limits_.read_timeout) {
          refuse(*c, 408, "the request head stalled: no byte came for " +
                              std::to_string(limits_.read_timeout.count() / 1000) + " s");
        } else if (now - c->since > limits_.request_timeout) {
          refuse(*c, 408, "the request head did not arrive within " +
                              std::to_string(limits_.request_timeout.count() / 1000) + " s");
        }
      }
    }
    // Connections done with: closed by their client, idle too long, or
    // refused and lingered long enough.
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      Connection& c = *it->second;
      if (c.state == Connection::State::Closing && now >= c.linger_until) {
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
        release(std::move(it->second));
        it = waiting_.erase(it);
      } else {
        ++it;
      }
    }
    if (!ready.empty()) {
      {
        std::lock_guard lock(mutex_);
        for (auto& c : ready) work_.push_back(std::move(c));
      }
      work_ready_.notify_all();
    }
  }
  for (auto& [fd, c] : waiting_) release(std::move(c));
  waiting_.clear();
}

void ConnectionManager::run_worker() {
  for (;;) {
    std::unique_ptr<Connection> c;
    {
      std::unique_lock lock(mutex_);
      work_ready_.wait(lock, [this] { return !work_.empty() || stopping_; });
      if (work_.empty()) return;  // stopping
      c = std::move(work_.front());
      work_.pop_front();
    }
    serve(std::move(c));
  }
}

void ConnectionManager::serve(std::unique_ptr<Connection> c) {
  for (;;) {
    bool connection_closed = false;
    tls_close_after_response = false;
    bool ok;
    {
      ConnectionStream stream(c->buffer, c->offset, c->fd, limits_.read_timeout, limits_.write_timeout);
      tls_client_fd = c->fd;
      ok = serve_(stream, connection_closed);
      tls_client_fd = -1;
    }
    c->since = c->last_byte = Clock::now();
    if (!ok) return release(std::move(c));
    bool stopping;
    {
      std::lock_guard lock(mutex_);
      stopping = stopping_;
    }
    if (connection_closed || tls_close_after_response || stopping || draining_.load()) {
      shutdown(c->fd, SHUT_WR);
      c->state = Connection::State::Closing;
      c->linger_until = Clock::now() + kLinger;
      c->buffer.clear();
      c->offset = 0;
      c->compact();
      return start_waiting(std::move(c));
    }
    c->compact();
    // Pipelined: the next head is already here, answer it now (in order).
    const auto length = request_head_length(c->unread());
    if (!length) return start_waiting(std::move(c));
    const HeadVerdict verdict = check_request_head(c->unread().substr(0, *length), limits_.max_body_bytes);
    if (verdict.status != 0) {
      refuse(*c, verdict.status, verdict.detail);
      return start_waiting(std::move(c));
    }
  }
}

}  // namespace astrai
