// The emulated NCCL (cuda/emulation/nccl_emulated.cpp) across processes: each
// scenario runs emulated_nccl_rank once per rank, as tensor-parallel ranks
// run, and checks the ranks' exit statuses, results and fault messages.
// The sums are checked bit for bit against rank order, computed by the rank
// program on the host (the stand-in's stated order).
#include <nccl.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "engine/distributed/child_process.h"

namespace astrai {
namespace {

struct RankRun {
  int status = -1;
  std::string out, err;
};

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `scenario` on `nranks` processes. With `killed` >= 0 that rank never
// ends by itself: it is killed once the others have ended.
std::vector<RankRun> run_ranks(const std::string& scenario, int nranks, int killed = -1,
                               std::vector<std::string> env = {}) {
  const char* program = std::getenv("ASTRAI_NCCL_RANK_PROGRAM");
  REQUIRE(program != nullptr);
  ncclUniqueId id{};
  REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  const auto dir = std::filesystem::temp_directory_path() /
                   ("astrai-nccl-test-" + std::to_string(::getpid()) + "-" + scenario);
  std::filesystem::create_directories(dir);
  std::vector<ChildProcess> children;
  for (int r = 0; r < nranks; ++r)
    children.push_back(ChildProcess::spawn({{program, scenario, std::to_string(r), std::to_string(nranks), id.internal},
                                            env,
                                            (dir / ("out" + std::to_string(r))).string(),
                                            (dir / ("err" + std::to_string(r))).string()}));
  std::vector<RankRun> runs(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r)
    if (r != killed) runs[size_t(r)].status = children[size_t(r)].wait();
  if (killed >= 0) {
    children[size_t(killed)].signal(SIGKILL);
    runs[size_t(killed)].status = children[size_t(killed)].wait();
  }
  for (int r = 0; r < nranks; ++r) {
    runs[size_t(r)].out = read_text(dir / ("out" + std::to_string(r)));
    runs[size_t(r)].err = read_text(dir / ("err" + std::to_string(r)));
  }
  std::filesystem::remove_all(dir);
  return runs;
}

void check_all_pass_with_equal_results(const std::vector<RankRun>& runs) {
  for (size_t r = 0; r < runs.size(); ++r) {
    INFO("rank " << r << " stderr: " << runs[r].err);
    CHECK(runs[r].status == 0);
    CHECK(runs[r].out.rfind("result ", 0) == 0);
    CHECK(runs[r].out == runs[0].out);  // every rank holds the same bytes
  }
}

}  // namespace

TEST_CASE("emulated NCCL: all-reduce sums in rank order, the same bits on every rank", "[cuda][nccl]") {
  for (const int nranks : {1, 2, 3, 4}) {
    INFO(nranks << " ranks");
    check_all_pass_with_equal_results(run_ranks("allreduce", nranks));
  }
  SECTION("several rounds of the staging area") { check_all_pass_with_equal_results(run_ranks("allreduce-large", 2)); }
  SECTION("a rank that joins after the others wait") { check_all_pass_with_equal_results(run_ranks("late-join", 3)); }
}

TEST_CASE("emulated NCCL: broadcast and all-gather", "[cuda][nccl]") {
  check_all_pass_with_equal_results(run_ranks("broadcast", 3));
  check_all_pass_with_equal_results(run_ranks("allgather", 4));
}

TEST_CASE("emulated NCCL: a captured all-reduce runs again at each graph replay", "[cuda][nccl]") {
  check_all_pass_with_equal_results(run_ranks("graph", 2));
}

TEST_CASE("emulated NCCL: collectives that differ between ranks fault on every rank, naming both", "[cuda][nccl]") {
  struct Case {
    const char* scenario;
    const char* rank0, *rank1;
  };
  for (const Case& c : {Case{"count-mismatch", "ncclAllReduce of 1000 float32", "ncclAllReduce of 1001 float32"},
                        Case{"type-mismatch", "ncclAllReduce of 1000 float32", "ncclAllReduce of 1000 int32"},
                        Case{"kind-mismatch", "ncclAllReduce of 1000 float32", "ncclBroadcast of 1000 float32"}}) {
    const auto runs = run_ranks(c.scenario, 2);
    for (size_t r = 0; r < 2; ++r) {
      INFO(c.scenario << ", rank " << r << " stderr: " << runs[r].err);
      CHECK(runs[r].status == 3);
      CHECK(runs[r].err.find("collective #1 differs between ranks") != std::string::npos);
      CHECK(runs[r].err.find(c.rank0) != std::string::npos);
      CHECK(runs[r].err.find(c.rank1) != std::string::npos);
    }
  }
}

TEST_CASE("emulated NCCL: a rank that exits, never arrives or aborts fails the others with its rank", "[cuda][nccl]") {
  SECTION("exits") {
    const auto runs = run_ranks("peer-exits", 2);
    INFO(runs[0].err);
    CHECK(runs[0].status == 3);
    CHECK(runs[0].err.find("rank 1 (pid ") != std::string::npos);
    CHECK(runs[0].err.find("exited while rank 0 waited for it at collective #1") != std::string::npos);
  }
  SECTION("never arrives (alive, elsewhere: the timeout)") {
    // The peer never calls, so the outcome does not depend on the machine's speed.
    const auto runs = run_ranks("peer-sleeps", 3, 1, {"ASTRAI_EMULATED_NCCL_TIMEOUT_S=1"});
    for (const int r : {0, 2}) {
      INFO(runs[size_t(r)].err);
      CHECK(runs[size_t(r)].status == 3);
      CHECK(runs[size_t(r)].err.find("rank 1 never arrived at collective #1") != std::string::npos);
    }
  }
  SECTION("aborts") {
    const auto runs = run_ranks("abort", 2);
    INFO(runs[0].err);
    CHECK(runs[1].status == 0);
    CHECK(runs[0].status == 3);
    CHECK(runs[0].err.find("rank 1 aborted the communicator") != std::string::npos);
  }
}

TEST_CASE("emulated NCCL: ranks share no memory: another rank's device pointer is refused", "[cuda][nccl]") {
  const auto file = std::filesystem::temp_directory_path() / ("astrai-nccl-pointer-" + std::to_string(::getpid()));
  std::filesystem::remove(file);
  const auto runs = run_ranks("foreign-buffer", 2, -1, {"ASTRAI_NCCL_POINTER_FILE=" + file.string()});
  std::filesystem::remove(file);
  INFO("rank 1: " << runs[1].err << "rank 0: " << runs[0].err);
  CHECK(runs[1].status == 3);
  CHECK(runs[1].err.find("is not device memory of this process") != std::string::npos);
  CHECK(runs[0].status == 3);  // its partner never came: it exited first
  CHECK(runs[0].err.find("rank 1 (pid ") != std::string::npos);
}

TEST_CASE("emulated NCCL: a rank told another rank count, and a host buffer, are refused", "[cuda][nccl]") {
  const auto wrong = run_ranks("wrong-nranks", 2);
  for (size_t r = 0; r < 2; ++r) {
    INFO("rank " << r << ": " << wrong[r].err);
    CHECK(wrong[r].status == 3);
  }
  // Whichever rank made the segment, the other names both counts.
  const std::string both = wrong[0].err + wrong[1].err;
  CHECK((both.find("was told of 3 ranks, the communicator has 2") != std::string::npos ||
         both.find("was told of 2 ranks, the communicator has 3") != std::string::npos));
  const auto host = run_ranks("host-buffer", 2);
  for (size_t r = 0; r < 2; ++r) {
    INFO("rank " << r << ": " << host[r].err);
    CHECK(host[r].status == 3);
    CHECK(host[r].err.find("is not device memory of this process") != std::string::npos);
  }
}

}  // namespace astrai
