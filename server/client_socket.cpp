#include "server/client_socket.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace astrai {

namespace {

// "ADDRESS" and port of a socket address, in the form httplib reports them.
bool address_and_port(const sockaddr_storage& a, std::string& address, int& port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(a);
    if (!inet_ntop(AF_INET, &v4.sin_addr, text, sizeof text)) return false;
    port = ntohs(v4.sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(a);
    if (!inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof text)) return false;
    port = ntohs(v6.sin6_port);
  } else {
    return false;
  }
  address = text;
  return true;
}

bool matches(int fd, int local_port, const std::string& remote_addr, int remote_port) {
  sockaddr_storage local{}, peer{};
  socklen_t local_size = sizeof local, peer_size = sizeof peer;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_size) != 0) return false;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_size) != 0) return false;
  std::string address, unused;
  int port = 0, local_p = 0;
  return address_and_port(local, unused, local_p) && local_p == local_port &&
         address_and_port(peer, address, port) && port == remote_port && address == remote_addr;
}

}  // namespace

std::optional<ClientSocket> ClientSocket::find(int local_port, const std::string& remote_addr, int remote_port) {
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return std::nullopt;
  std::optional<ClientSocket> found;
  const int dir_fd = dirfd(dir);
  while (const dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == dir_fd) continue;
    if (!matches(int(fd), local_port, remote_addr, remote_port)) continue;
    // Check again on our own descriptor: between the first check and dup()
    // the number may have been closed and reused for another connection.
    const int own = fcntl(int(fd), F_DUPFD_CLOEXEC, 0);
    if (own < 0) continue;
    if (matches(own, local_port, remote_addr, remote_port)) {
      found.emplace(ClientSocket(own));
      break;
    }
    close(own);
  }
  closedir(dir);
  return found;
}

ClientSocket::~ClientSocket() {
  if (fd_ >= 0) close(fd_);
}

bool ClientSocket::closed_by_peer() const {
  char byte;
  const ssize_t n = recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return true;
  if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
  return false;
}

}  // namespace astrai
