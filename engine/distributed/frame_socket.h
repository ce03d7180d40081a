// A TCP connection that carries whole messages ("frames": a 4-byte
// big-endian length, then that many bytes), as the tensor-parallel ranks
// talk to rank 0 (docs/tensor-parallel.md): plain sockets, because a rank's
// death must show at once as the connection closing (ZeroMQ hides it behind
// reconnects), and one connection per rank keeps messages in order.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace astrai {

class FrameSocket {
 public:
  // Frames longer than this are refused on both ends (a corrupt length
  // would otherwise allocate whatever it says).
  static constexpr size_t kMaxFrameBytes = size_t(1) << 28;

  // Connects to host:port, trying again every 100 ms until `timeout_s` (the
  // other side may not be listening yet). Throws std::runtime_error naming
  // the address and the last error.
  static FrameSocket connect(const std::string& host, int port, double timeout_s);

  FrameSocket() = default;
  explicit FrameSocket(int fd) : fd_(fd) {}
  FrameSocket(FrameSocket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  FrameSocket& operator=(FrameSocket&& other) noexcept;
  FrameSocket(const FrameSocket&) = delete;
  FrameSocket& operator=(const FrameSocket&) = delete;
  ~FrameSocket();

  // Sends one frame whole. Throws std::runtime_error when the peer is gone.
  void send(std::string_view frame);
  // The next frame; nullopt when the peer closed the connection between
  // frames. Throws std::runtime_error for a connection cut inside a frame,
  // a frame over kMaxFrameBytes, or a socket error.
  std::optional<std::string> receive();
  // Waits up to timeout_ms for a frame to arrive or the peer to close
  // (without reading); false on timeout.
  bool wait_readable(int timeout_ms) const;
  // Whether the peer has closed its end (or the connection broke), without
  // reading: for a watch that must not take frames from the reader.
  bool peer_closed() const;
  int fd() const { return fd_; }
  void close();

 private:
  int fd_ = -1;
};

class FrameListener {
 public:
  // Listens on host:port ("0.0.0.0" for every interface; port 0: a free
  // port, see port()). Throws std::runtime_error naming the address.
  FrameListener(const std::string& host, int port);
  ~FrameListener();
  FrameListener(const FrameListener&) = delete;
  FrameListener& operator=(const FrameListener&) = delete;
  int port() const { return port_; }
  // The next connection, or nullopt after timeout_ms.
  std::optional<FrameSocket> accept(int timeout_ms);

 private:
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace astrai
