// The socket of one client connection, found from the addresses httplib
// gives a handler, so that a handler waiting for a non-streamed generation
// can notice that its client went away (httplib 0.11 does not hand the
// socket to handlers, and writes nothing that could fail until the end).
//
// find() looks through this process's open descriptors (/proc/self/fd) for
// the TCP socket whose local port and peer address match, and keeps its own
// dup() of it: the kernel may give the original descriptor number to a newer
// connection once httplib closes it, but never the socket a dup() holds.
// One scan costs tens of microseconds per open descriptor; it is done once
// per non-streamed request.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace astrai {

class ClientSocket {
 public:
  // nullopt when no such socket is open (the client already left).
  static std::optional<ClientSocket> find(int local_port, const std::string& remote_addr, int remote_port);

  ClientSocket(ClientSocket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  ClientSocket& operator=(ClientSocket&&) = delete;
  ClientSocket(const ClientSocket&) = delete;
  ~ClientSocket();

  // Whether the client has closed its end: end of file or an error such as
  // a reset is waiting. Bytes waiting (a pipelined next request) or none
  // mean it is still there. A client that only half-closes after sending
  // its request counts as gone, as in other servers that poll for this.
  bool closed_by_peer() const;

 private:
  explicit ClientSocket(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace astrai
