// Rank 0's side of a tensor-parallel group: the other ranks' connections
// and, on its node, their processes (docs/tensor-parallel.md). It listens
// at the master address, starts this node's other ranks unless a launcher
// started every rank, takes one connection per rank (each identifying
// itself by its first frame), and once serving watches them all: a rank
// that reports a failure, closes its connection or whose process exits is
// a failure of the group, reported once.
//
// Frames only (frame_socket.h): what they say is the caller's
// (cuda/tensor_parallel/rank_messages.h).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "engine/distributed/child_process.h"
#include "engine/distributed/frame_socket.h"
#include "engine/distributed/tensor_parallel_launch.h"

namespace astrai {

// Who a connection says it is (its first frame, read by the caller).
struct RankIdentity {
  int rank = 0;
  int pid = 0;
  std::string host;
};

// Starts this node's ranks other than this process's own, as the launch
// says (none when a launcher started every rank): `rank_command` with
// "--rank R --local-rank L --master-addr A --master-port P" appended.
std::map<int, ChildProcess> start_node_ranks(const TensorParallelLaunch& launch,
                                             const std::vector<std::string>& rank_command,
                                             const std::string& master_addr, int master_port);

class RankGroup {
 public:
  // Starts and connects the other ranks. `rank_command` starts one rank of
  // this node: the group appends "--rank R --local-rank L --master-addr A
  // --master-port P". `identify` reads a connection's first frame and
  // returns the rank it is (throwing to refuse it). Throws
  // std::runtime_error when a rank does not connect within `timeout_s`, a
  // process it started exits first (its status in the message), or two
  // connections claim one rank.
  RankGroup(const TensorParallelLaunch& launch, const std::vector<std::string>& rank_command, double timeout_s,
            const std::function<RankIdentity(const std::string& first_frame)>& identify);
  // Stops the watch; the processes this group started are killed if
  // close() did not end them.
  ~RankGroup();
  RankGroup(const RankGroup&) = delete;
  RankGroup& operator=(const RankGroup&) = delete;

  int world() const { return world_; }
  // "rank 2 (pid 4711)", for messages.
  std::string describe(int rank) const;

  // Before watch(): the next frame from `rank`; throws std::runtime_error
  // when it closes its connection or its process exits (saying how), or
  // after timeout_s.
  std::string receive(int rank, double timeout_s);
  // Sends to every rank but 0, in rank order. Thread-safe. Throws when a
  // rank's connection is gone.
  void send_all(std::string_view frame);

  // From now on a thread watches every connection: on a frame (a rank's
  // report of its own failure), a closed connection or an exited process,
  // on_failure(rank, the frame or nullopt, a description) is called once,
  // on that thread, for the first failure.
  using FailureHandler = std::function<void(int rank, const std::optional<std::string>& frame, const std::string& what)>;
  void watch(FailureHandler on_failure);

  // Stops the watch, sends `farewell` to every rank and waits up to
  // timeout_s for the processes it started to exit (then kills them).
  // Returns those processes' exit statuses, by rank.
  std::map<int, int> close(std::string_view farewell, double timeout_s);

 private:
  struct Member {
    FrameSocket socket;
    int pid = 0;
    std::string host;
  };
  // The process started for `rank`, if any.
  ChildProcess* child_of(int rank);
  void watch_loop(FailureHandler on_failure);

  int world_ = 1;
  std::map<int, Member> members_;       // ranks 1 .. world - 1
  std::map<int, ChildProcess> children_;  // the ranks this process started, by rank
  std::mutex send_mutex_;
  std::atomic<bool> stopping_{false};
  std::thread watcher_;
};

}  // namespace astrai
