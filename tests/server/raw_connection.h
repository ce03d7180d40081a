// A client on a raw TCP socket, for tests that decide exactly which bytes go
// out, when, and when the connection closes.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <stdexcept>
#include <string>

namespace astrai::test {

class RawConnection {
 public:
  explicit RawConnection(int port) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(uint16_t(port));
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    if (fd_ < 0 || connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0)
      throw std::runtime_error("cannot connect to the test server");
  }
  ~RawConnection() { close(); }
  void send(const std::string& bytes) const {
    if (::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) != ssize_t(bytes.size()))
      throw std::runtime_error("send failed");
  }
  // What has arrived within `wait` ("" if nothing).
  std::string receive(std::chrono::milliseconds wait) const {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, int(wait.count())) <= 0) return "";
    char buffer[4096];
    const ssize_t n = recv(fd_, buffer, sizeof buffer, 0);
    return n > 0 ? std::string(buffer, size_t(n)) : "";
  }
  bool try_send(const std::string& bytes) const {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == ssize_t(bytes.size());
  }
  // Everything until the server closes the connection, or until `wait`
  // has passed since the call (then `closed` is false).
  std::string receive_until_closed(std::chrono::milliseconds wait, bool& closed) const {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    std::string all;
    closed = false;
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return all;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, int(left.count())) <= 0) continue;
      char buffer[65536];
      const ssize_t n = recv(fd_, buffer, sizeof buffer, 0);
      if (n <= 0) {
        closed = true;
        return all;
      }
      all.append(buffer, size_t(n));
    }
  }
  // Whether the server ends the connection (end of file or reset) within `wait`.
  bool closed_by_server(std::chrono::milliseconds wait) const {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, int(wait.count())) <= 0) return false;
    char byte;
    const ssize_t n = recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

}  // namespace astrai::test
