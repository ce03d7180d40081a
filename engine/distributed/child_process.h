// A child process started from an argument vector, as the tensor-parallel
// ranks of one node are (docs/tensor-parallel.md): fork and exec, no shell,
// reaped by its owner (killed first if it still runs). Nothing ties the
// child's life to its parent's here (PR_SET_PDEATHSIG fires when the thread
// that forked exits, not the process): a rank ends when rank 0's connection
// closes (cuda/tensor_parallel/rank_worker.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace astrai {

struct SpawnOptions {
  std::vector<std::string> argv;       // argv[0] is the program's path
  std::vector<std::string> extra_env;  // "NAME=value", added to (or replacing in) this process's environment
  std::string stdout_path, stderr_path;  // "": inherited; else the file is created (truncated)
};

class ChildProcess {
 public:
  // Throws std::runtime_error when the program cannot be started (an exec
  // failure is reported by the child as exit status 127).
  static ChildProcess spawn(const SpawnOptions& options);

  ChildProcess() = default;
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  // A child still running is killed (SIGKILL) and reaped.
  ~ChildProcess();

  int pid() const { return pid_; }
  bool running() const { return pid_ > 0 && !status_; }
  // The exit status once it has ended (128 + signal number when a signal
  // ended it), without waiting; nullopt while it runs.
  std::optional<int> try_wait();
  int wait();
  void signal(int sig) const;

 private:
  int pid_ = 0;
  std::optional<int> status_;
};

// "exit status 3" or "killed by signal 9 (Killed)", for messages.
std::string describe_exit_status(int status);

}  // namespace astrai
