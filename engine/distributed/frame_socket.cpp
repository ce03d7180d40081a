#include "engine/distributed/frame_socket.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace astrai {
namespace {

std::string error_text() { return std::strerror(errno); }

// The IPv4/IPv6 addresses of host:port (getaddrinfo); throws when none.
addrinfo* resolve(const std::string& host, int port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo* result = nullptr;
  const int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &result);
  if (rc != 0) throw std::runtime_error("cannot resolve " + host + ": " + gai_strerror(rc));
  return result;
}

void set_nodelay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // a step's plan is small and waited for
}

// Reads exactly n bytes; false when the peer closed before the first byte.
bool read_exactly(int fd, char* p, size_t n, bool* partial) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::recv(fd, p + got, n - got, 0);
    if (r == 0) {
      *partial = got > 0;
      return false;
    }
    if (r < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("receive: " + error_text());
    }
    got += size_t(r);
  }
  return true;
}

}  // namespace

FrameSocket FrameSocket::connect(const std::string& host, int port, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  std::string last = "no address";
  while (true) {
    addrinfo* list = resolve(host, port, false);
    for (addrinfo* a = list; a != nullptr; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) {
        last = error_text();
        continue;
      }
      if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        freeaddrinfo(list);
        set_nodelay(fd);
        return FrameSocket(fd);
      }
      last = error_text();
      ::close(fd);
    }
    freeaddrinfo(list);
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("cannot connect to " + host + ":" + std::to_string(port) + " within " +
                               std::to_string(int(timeout_s)) + " s: " + last);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

FrameSocket& FrameSocket::operator=(FrameSocket&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

FrameSocket::~FrameSocket() { close(); }

void FrameSocket::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void FrameSocket::send(std::string_view frame) {
  if (frame.size() > kMaxFrameBytes)
    throw std::invalid_argument("a frame of " + std::to_string(frame.size()) + " bytes is over the limit");
  const uint32_t length = htonl(uint32_t(frame.size()));
  std::string bytes(reinterpret_cast<const char*>(&length), 4);
  bytes.append(frame);
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t r = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("send: " + error_text());
    }
    sent += size_t(r);
  }
}

std::optional<std::string> FrameSocket::receive() {
  uint32_t length = 0;
  bool partial = false;
  if (!read_exactly(fd_, reinterpret_cast<char*>(&length), 4, &partial)) {
    if (partial) throw std::runtime_error("receive: the connection closed inside a frame's length");
    return std::nullopt;
  }
  length = ntohl(length);
  if (length > kMaxFrameBytes) throw std::runtime_error("receive: a frame of " + std::to_string(length) + " bytes");
  std::string frame(length, '\0');
  if (length > 0 && !read_exactly(fd_, frame.data(), length, &partial))
    throw std::runtime_error("receive: the connection closed inside a frame");
  return frame;
}

bool FrameSocket::wait_readable(int timeout_ms) const {
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  while (true) {
    const int r = ::poll(&p, 1, timeout_ms);
    if (r < 0 && errno == EINTR) continue;
    return r > 0;
  }
}

bool FrameSocket::peer_closed() const {
  pollfd p{fd_, POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

FrameListener::FrameListener(const std::string& host, int port) {
  addrinfo* list = resolve(host, port, true);
  std::string last = "no address";
  for (addrinfo* a = list; a != nullptr && fd_ < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 64) == 0) {
      fd_ = fd;
    } else {
      last = error_text();
      ::close(fd);
    }
  }
  freeaddrinfo(list);
  if (fd_ < 0) throw std::runtime_error("cannot listen on " + host + ":" + std::to_string(port) + ": " + last);
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  getsockname(fd_, reinterpret_cast<sockaddr*>(&bound), &length);
  port_ = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                      : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

FrameListener::~FrameListener() {
  if (fd_ >= 0) ::close(fd_);
}

std::optional<FrameSocket> FrameListener::accept(int timeout_ms) {
  pollfd p{fd_, POLLIN, 0};
  int r;
  while ((r = ::poll(&p, 1, timeout_ms)) < 0 && errno == EINTR) {
  }
  if (r <= 0) return std::nullopt;
  const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) throw std::runtime_error("accept: " + error_text());
  set_nodelay(fd);
  return FrameSocket(fd);
}

}  // namespace astrai
