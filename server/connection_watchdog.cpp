#include "server/connection_watchdog.h"

#include <vector>

#include "server/client_socket.h"

namespace astrai {

namespace {

constexpr std::chrono::milliseconds kLookInterval{250};

std::string key_of(const std::string& addr, int port) { return addr + ":" + std::to_string(port); }

}  // namespace

ConnectionWatchdog::ConnectionWatchdog(int local_port, std::chrono::milliseconds request_timeout,
                                       uint64_t max_request_bytes)
    : local_port_(local_port), request_timeout_(request_timeout), max_request_bytes_(max_request_bytes) {
  thread_ = std::thread([this] { run(); });
}

ConnectionWatchdog::~ConnectionWatchdog() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void ConnectionWatchdog::request_started(const std::string& remote_addr, int remote_port) {
  if (remote_addr.empty()) return;
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex_);
  auto [it, added] = connections_.try_emplace(key_of(remote_addr, remote_port));
  if (added) it->second.created = now;
  it->second.busy = true;
}

void ConnectionWatchdog::request_ended(const std::string& remote_addr, int remote_port) {
  if (remote_addr.empty()) return;
  std::lock_guard lock(mutex_);
  const auto it = connections_.find(key_of(remote_addr, remote_port));
  if (it == connections_.end()) return;
  it->second.busy = false;
  it->second.since = std::chrono::steady_clock::now();
  it->second.rebase = true;
}

ConnectionWatchdog::Counts ConnectionWatchdog::counts() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

void ConnectionWatchdog::run() {
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, kLookInterval, [this] { return stopping_; })) {
    lock.unlock();
    look();
    lock.lock();
  }
}

void ConnectionWatchdog::look() {
  const auto start = std::chrono::steady_clock::now();
  // Listed before the lock is taken (a scan of /proc/self/fd); every socket
  // open at `start` and still open is in it.
  const std::vector<ClientSocket> sockets = ClientSocket::all(local_port_);
  std::lock_guard lock(mutex_);
  std::map<std::string, Connection> seen;
  for (const ClientSocket& socket : sockets) {
    const std::string key = socket.peer();
    if (key.empty()) continue;
    auto existing = connections_.find(key);
    Connection c;
    if (existing != connections_.end()) {
      c = existing->second;
      connections_.erase(existing);
    } else {
      c.created = c.since = start;  // first seen now: opened at most one interval ago
    }
    const uint64_t received = socket.bytes_received();
    if (c.rebase) {
      c.baseline = received;
      c.rebase = false;
    }
    if (!c.busy && !c.shut) {
      const bool too_large = received > c.baseline && received - c.baseline > max_request_bytes_;
      const bool too_slow = start - c.since > request_timeout_ && !socket.unread_request_head_complete();
      if (too_large || too_slow) {
        socket.shut_down();
        c.shut = true;
        ++(too_large ? counts_.too_large : counts_.timed_out);
      }
    }
    seen.emplace(key, c);
  }
  // Entries not seen belong to closed connections, except those that
  // request_started() made after the listing began.
  for (auto& [key, c] : connections_)
    if (c.created >= start) seen.emplace(key, c);
  connections_ = std::move(seen);
}

}  // namespace astrai
