#include "engine/distributed/rank_group.h"

#include <poll.h>
#include <sys/socket.h>

#include <signal.h>

#include <chrono>
#include <stdexcept>

namespace astrai {
namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace

std::map<int, ChildProcess> start_node_ranks(const TensorParallelLaunch& launch,
                                             const std::vector<std::string>& rank_command,
                                             const std::string& master_addr, int master_port) {
  std::map<int, ChildProcess> children;
  for (int i = 1; i <= launch.started_ranks(); ++i) {
    SpawnOptions o;
    o.argv = rank_command;
    const int rank = launch.rank + i;
    for (const std::string& a : {std::string("--rank"), std::to_string(rank), std::string("--local-rank"),
                                 std::to_string(launch.local_rank + i), std::string("--master-addr"), master_addr,
                                 std::string("--master-port"), std::to_string(master_port)})
      o.argv.push_back(a);
    children.emplace(rank, ChildProcess::spawn(o));
  }
  return children;
}

RankGroup::RankGroup(const TensorParallelLaunch& launch, const std::vector<std::string>& rank_command,
                     double timeout_s, const std::function<RankIdentity(const std::string& first_frame)>& identify)
    : world_(launch.world) {
  // One node: loopback only. Several nodes (or a launcher's ranks): every interface.
  const bool local_only = launch.nnodes == 1 && !launch.launched_externally;
  FrameListener listener(local_only ? "127.0.0.1" : "0.0.0.0", launch.master_port);
  children_ = start_node_ranks(launch, rank_command, "127.0.0.1", listener.port());
  const auto deadline = after(timeout_s);
  while (int(members_.size()) < world_ - 1) {
    for (auto& [rank, child] : children_)
      if (const auto status = child.try_wait())
        throw std::runtime_error("tensor parallel: rank " + std::to_string(rank) + " (pid " +
                                 std::to_string(child.pid()) + ") ended before it joined: " +
                                 describe_exit_status(*status));
    if (Clock::now() > deadline) {
      std::string missing;
      for (int r = 1; r < world_; ++r)
        if (!members_.contains(r)) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      throw std::runtime_error("tensor parallel: rank" + std::string(world_ - 1 - members_.size() > 1 ? "s " : " ") +
                               missing + " did not join rank 0 at port " + std::to_string(listener.port()) +
                               " within " + std::to_string(int(timeout_s)) + " s");
    }
    std::optional<FrameSocket> socket = listener.accept(100);
    if (!socket) continue;
    if (!socket->wait_readable(int(timeout_s * 1000))) continue;  // a connection that never speaks is dropped
    const std::optional<std::string> first = socket->receive();
    if (!first) continue;
    const RankIdentity id = identify(*first);
    if (id.rank < 1 || id.rank >= world_)
      throw std::runtime_error("tensor parallel: a connection claims rank " + std::to_string(id.rank) + " of " +
                               std::to_string(world_));
    if (members_.contains(id.rank))
      throw std::runtime_error("tensor parallel: two processes claim rank " + std::to_string(id.rank) + " (pids " +
                               std::to_string(members_.at(id.rank).pid) + " and " + std::to_string(id.pid) + ")");
    members_.emplace(id.rank, Member{std::move(*socket), id.pid, id.host});
  }
}

RankGroup::~RankGroup() {
  stopping_ = true;
  if (watcher_.joinable()) watcher_.join();
}

std::string RankGroup::describe(int rank) const {
  const auto it = members_.find(rank);
  if (it == members_.end()) return "rank " + std::to_string(rank);
  return "rank " + std::to_string(rank) + " (pid " + std::to_string(it->second.pid) +
         (it->second.host.empty() ? "" : " on " + it->second.host) + ")";
}

ChildProcess* RankGroup::child_of(int rank) {
  const auto it = children_.find(rank);
  return it == children_.end() ? nullptr : &it->second;
}

std::string RankGroup::receive(int rank, double timeout_s) {
  Member& m = members_.at(rank);
  const auto deadline = after(timeout_s);
  while (!m.socket.wait_readable(100)) {
    if (ChildProcess* child = child_of(rank); child != nullptr)
      if (const auto status = child->try_wait())
        throw std::runtime_error("tensor parallel: " + describe(rank) + " ended: " + describe_exit_status(*status));
    if (Clock::now() > deadline)
      throw std::runtime_error("tensor parallel: " + describe(rank) + " did not answer within " +
                               std::to_string(int(timeout_s)) + " s");
  }
  std::optional<std::string> frame = m.socket.receive();
  if (!frame) {
    std::string how = "closed its connection";
    if (ChildProcess* child = child_of(rank); child != nullptr) how += " and ended: " + describe_exit_status(child->wait());
    throw std::runtime_error("tensor parallel: " + describe(rank) + " " + how);
  }
  return *frame;
}

void RankGroup::send_all(std::string_view frame) {
  std::lock_guard lock(send_mutex_);
  for (auto& [rank, m] : members_) {
    try {
      m.socket.send(frame);
    } catch (const std::exception& e) {
      throw std::runtime_error("tensor parallel: cannot reach " + describe(rank) + ": " + e.what());
    }
  }
}

void RankGroup::watch(FailureHandler on_failure) {
  watcher_ = std::thread([this, on_failure = std::move(on_failure)] { watch_loop(on_failure); });
}

void RankGroup::watch_loop(FailureHandler on_failure) {
  std::vector<pollfd> fds;
  std::vector<int> ranks;
  for (auto& [rank, m] : members_) {
    fds.push_back(pollfd{m.socket.fd(), POLLIN | POLLRDHUP, 0});
    ranks.push_back(rank);
  }
  while (!stopping_) {
    for (auto& [rank, child] : children_)
      if (const auto status = child.try_wait(); status && !stopping_) {
        on_failure(rank, std::nullopt, describe(rank) + " ended: " + describe_exit_status(*status));
        return;
      }
    if (::poll(fds.data(), fds.size(), 100) <= 0) continue;
    for (size_t i = 0; i < fds.size() && !stopping_; ++i) {
      if (fds[i].revents == 0) continue;
      const int rank = ranks[i];
      std::optional<std::string> frame;
      try {
        frame = members_.at(rank).socket.receive();
      } catch (const std::exception&) {
      }
      if (stopping_) return;
      std::string what = describe(rank) + (frame ? " reported a failure" : " closed its connection");
      if (!frame)
        if (ChildProcess* child = child_of(rank); child != nullptr) {
          // Its process is ending: wait a moment for the status that says how.
          for (int i2 = 0; i2 < 20 && !child->try_wait(); ++i2) std::this_thread::sleep_for(std::chrono::milliseconds(50));
          if (const auto status = child->try_wait()) what += " and ended: " + describe_exit_status(*status);
        }
      on_failure(rank, frame, what);
      return;
    }
  }
}

std::map<int, int> RankGroup::close(std::string_view farewell, double timeout_s) {
  stopping_ = true;
  if (watcher_.joinable()) watcher_.join();
  {
    std::lock_guard lock(send_mutex_);
    for (auto& [rank, m] : members_) {
      try {
        m.socket.send(farewell);
      } catch (const std::exception&) {
      }
      ::shutdown(m.socket.fd(), SHUT_WR);
    }
  }
  const auto deadline = after(timeout_s);
  std::map<int, int> statuses;
  for (auto& [rank, child] : children_) {
    while (!child.try_wait() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!child.try_wait()) child.signal(SIGKILL);
    statuses[rank] = child.wait();
  }
  return statuses;
}

}  // namespace astrai
