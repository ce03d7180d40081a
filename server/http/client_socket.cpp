#include "server/http/client_socket.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
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

// A connected TCP socket's local port and peer, as httplib reports them;
// nullopt for anything else (a listening socket, a pipe, a file).
struct Endpoints {
  int local_port = 0;
  std::string peer_address;
  int peer_port = 0;
};
std::optional<Endpoints> endpoints_of(int fd) {
  sockaddr_storage local{}, peer{};
  socklen_t local_size = sizeof local, peer_size = sizeof peer;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_size) != 0) return std::nullopt;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_size) != 0) return std::nullopt;
  Endpoints e;
  std::string local_address;
  if (!address_and_port(local, local_address, e.local_port) || !address_and_port(peer, e.peer_address, e.peer_port))
    return std::nullopt;
  return e;
}

bool matches(int fd, int local_port, const std::string& remote_addr, int remote_port) {
  const auto e = endpoints_of(fd);
  return e && e->local_port == local_port && e->peer_port == remote_port && e->peer_address == remote_addr;
}

// Calls visit(own) with a dup() of each open descriptor for which accept(fd)
// holds, until visit returns false. The check is made again on the dup:
// between the first check and dup() the number may have been closed and
// reused for another connection. visit takes ownership of `own`.
template <class Accept, class Visit>
void for_each_socket(Accept accept, Visit visit) {
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return;
  const int dir_fd = dirfd(dir);
  while (const dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == dir_fd || !accept(int(fd))) continue;
    const int own = fcntl(int(fd), F_DUPFD_CLOEXEC, 0);
    if (own < 0) continue;
    if (!accept(own)) {
      close(own);
      continue;
    }
    if (!visit(own)) break;
  }
  closedir(dir);
}

}  // namespace

std::optional<ClientSocket> ClientSocket::find(int local_port, const std::string& remote_addr, int remote_port) {
  std::optional<ClientSocket> found;
  for_each_socket([&](int fd) { return matches(fd, local_port, remote_addr, remote_port); },
                  [&](int own) {
                    found.emplace(ClientSocket(own));
                    return false;
                  });
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
