#include "engine/distributed/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace astrai {
namespace {

int decode_status(int raw) {
  if (WIFEXITED(raw)) return WEXITSTATUS(raw);
  if (WIFSIGNALED(raw)) return 128 + WTERMSIG(raw);
  return 255;
}

// The environment with `extra` added, replacing variables of the same name.
std::vector<std::string> merged_environment(const std::vector<std::string>& extra) {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::string name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const std::string& x : extra)
      if (x.substr(0, x.find('=')) == name) replaced = true;
    if (!replaced) out.push_back(entry);
  }
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

}  // namespace

ChildProcess ChildProcess::spawn(const SpawnOptions& options) {
  if (options.argv.empty()) throw std::invalid_argument("ChildProcess::spawn: no program");
  // Everything the child needs is made before fork: between fork and exec a
  // child of a threaded process may only make async-signal-safe calls.
  std::vector<char*> argv;
  for (const std::string& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::vector<std::string> env_strings = merged_environment(options.extra_env);
  std::vector<char*> env;
  for (const std::string& e : env_strings) env.push_back(const_cast<char*>(e.c_str()));
  env.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    const auto redirect = [](const std::string& path, int fd) {
      if (path.empty()) return;
      const int file = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (file < 0 || dup2(file, fd) < 0) _exit(127);
    };
    redirect(options.stdout_path, STDOUT_FILENO);
    redirect(options.stderr_path, STDERR_FILENO);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execve(argv[0], argv.data(), env.data());
    _exit(127);
  }
  ChildProcess child;
  child.pid_ = pid;
  return child;
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept : pid_(other.pid_), status_(other.status_) {
  other.pid_ = 0;
  other.status_.reset();
}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    this->~ChildProcess();
    pid_ = other.pid_;
    status_ = other.status_;
    other.pid_ = 0;
    other.status_.reset();
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  if (running()) {
    kill(pid_, SIGKILL);
    wait();
  }
}

std::optional<int> ChildProcess::try_wait() {
  if (status_ || pid_ <= 0) return status_;
  int raw = 0;
  const pid_t r = waitpid(pid_, &raw, WNOHANG);
  if (r == pid_) status_ = decode_status(raw);
  return status_;
}

int ChildProcess::wait() {
  if (status_ || pid_ <= 0) return status_.value_or(255);
  int raw = 0;
  while (waitpid(pid_, &raw, 0) < 0) {
    if (errno != EINTR) {
      status_ = 255;
      return *status_;
    }
  }
  status_ = decode_status(raw);
  return *status_;
}

void ChildProcess::signal(int sig) const {
  if (running()) kill(pid_, sig);
}

std::string describe_exit_status(int status) {
  if (status > 128 && status < 128 + 65)
    return "killed by signal " + std::to_string(status - 128) + " (" + strsignal(status - 128) + ")";
  return "exit status " + std::to_string(status);
}

}  // namespace astrai
