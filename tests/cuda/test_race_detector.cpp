// The race detector (cuda/emulation/race_detector.h), -Dcuda=emulated only:
// each planted race in racy_kernels.cu is a kernel fault naming both source
// lines, and its fixed twin runs clean, so the detector neither misses these
// nor cries wolf on the barrier, __syncwarp, atomic or cp.async wait that
// fixes them.
#include <cuda_runtime_api.h>

#include <cmath>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "cuda/emulation/emulated_device.h"
#include "cuda/emulation/race_detector.h"
#include "tests/cuda/racy_kernels.h"

using namespace astrai;
using Catch::Matchers::Contains;

namespace {

const std::string kFile = "racy_kernels.cu:";

// Device memory for a test, freed at the end.
template <typename T>
struct DeviceArray {
  T* data = nullptr;
  explicit DeviceArray(size_t n) { REQUIRE(cudaMalloc(reinterpret_cast<void**>(&data), n * sizeof(T)) == cudaSuccess); }
  ~DeviceArray() { cudaFree(data); }
};

// Runs the queued work; returns the kernel fault's message, or "" when none.
std::string synchronize() {
  if (cudaDeviceSynchronize() == cudaSuccess) return "";
  const std::string fault = emu::last_kernel_fault();
  emu::reset_after_fault();
  return fault;
}

std::string line(int n) { return kFile + std::to_string(n); }

}  // namespace

TEST_CASE("race detector: is on in the emulated test runs", "[cuda][emulation]") {
  // CI runs the emulated suite with the detector, which is the default; a run
  // with ASTRAI_EMULATION_RACECHECK=0 (to measure its cost) fails here.
  CHECK(emu::race_detection());
}

TEST_CASE("race detector: shared memory written and read by two threads with no barrier between",
          "[cuda][emulation]") {
  DeviceArray<float> out(64);
  test::racy::shared_neighbour(out.data, true);
  CHECK(synchronize().empty());
  test::racy::shared_neighbour(out.data, false);
  const std::string fault = synchronize();
  CHECK_THAT(fault, Contains("shared-memory race") && Contains("shared_neighbour_kernel") &&
                        Contains(line(test::racy::shared_write_line)) && Contains(line(test::racy::shared_read_line)) &&
                        Contains("with no barrier between them"));
}

TEST_CASE("race detector: two blocks of a launch, one writing what the other reads", "[cuda][emulation]") {
  const int blocks = 5;
  DeviceArray<float> x(2 * blocks), input(blocks);
  REQUIRE(cudaMemset(input.data, 0, blocks * sizeof(float)) == cudaSuccess);
  test::racy::global_neighbour(x.data, input.data, blocks, false);
  CHECK(synchronize().empty());
  test::racy::global_neighbour(x.data, input.data, blocks, true);
  const std::string fault = synchronize();
  CHECK_THAT(fault, Contains("global-memory race") && Contains("global_neighbour_kernel") &&
                        Contains(line(test::racy::global_write_line)) && Contains(line(test::racy::global_read_line)));
}

// The detector keeps a launch's global accesses as byte ranges per block and
// replays them byte by byte only to name a race: drawn ranges check that it
// faults exactly when two blocks touch one byte and one of them writes (the
// expectation computed here byte by byte), and that the report's address is
// such a byte and its two blocks are two that touch it.
TEST_CASE("race detector: blocks reading and writing drawn byte ranges", "[cuda][emulation]") {
  constexpr int kBytes = 64, kThreads = 64, kMaxBlocks = 6;
  DeviceArray<uint8_t> bytes(kBytes), sink(size_t(kMaxBlocks) * kThreads);
  DeviceArray<int> ranges(4 * kMaxBlocks);
  int races = 0, clean = 0;
  rc::prop("drawn ranges", [&] {
    const int blocks = *rc::gen::inRange(2, kMaxBlocks + 1);
    std::vector<int> r;
    const auto range = [&] {  // empty a third of the time, else [a, b) inside the buffer
      const int a = *rc::gen::inRange(0, kBytes), n = *rc::gen::inRange(0, 3) == 0 ? 0 : *rc::gen::inRange(1, 9);
      r.push_back(a);
      r.push_back(std::min(kBytes, a + n));
    };
    for (int b = 0; b < blocks; ++b) range(), range();
    REQUIRE(cudaMemcpy(ranges.data, r.data(), r.size() * sizeof(int), cudaMemcpyHostToDevice) == cudaSuccess);
    std::vector<std::set<int>> readers(kBytes), writers(kBytes);
    for (int b = 0; b < blocks; ++b) {
      for (int i = r[size_t(4 * b)]; i < r[size_t(4 * b + 1)]; ++i) readers[size_t(i)].insert(b);
      for (int i = r[size_t(4 * b + 2)]; i < r[size_t(4 * b + 3)]; ++i) writers[size_t(i)].insert(b);
    }
    const auto racy = [&](int i) {
      std::set<int> touching = readers[size_t(i)];
      touching.insert(writers[size_t(i)].begin(), writers[size_t(i)].end());
      return !writers[size_t(i)].empty() && touching.size() >= 2;
    };
    bool expected = false;
    for (int i = 0; i < kBytes; ++i) expected = expected || racy(i);
    test::racy::global_ranges(bytes.data, ranges.data, blocks, kThreads, sink.data);
    const std::string fault = synchronize();
    RC_ASSERT(fault.empty() == !expected);
    ++(expected ? races : clean);
    if (!expected) return;
    std::smatch m;
    RC_ASSERT(std::regex_search(fault, m,
                                std::regex("global_ranges_kernel: global-memory race \\((\\w+) after (\\w+)\\) at device "
                                           "address (0x[0-9a-f]+): (\\w+) by block \\((\\d+),0,0\\).* and (\\w+) by "
                                           "block \\((\\d+),0,0\\)")));
    const long offset = long(std::stoull(m[3].str(), nullptr, 16) - reinterpret_cast<uintptr_t>(bytes.data));
    RC_ASSERT(offset >= 0 && offset < kBytes);
    RC_ASSERT(racy(int(offset)));
    const int first = std::stoi(m[5].str()), second = std::stoi(m[7].str());
    RC_ASSERT(first != second);
    RC_ASSERT(m[2].str() == m[4].str());  // "write after read": the first access named is the read
    RC_ASSERT(m[1].str() == m[6].str());
    const auto& first_set = m[4].str() == "write" ? writers : readers;
    const auto& second_set = m[6].str() == "write" ? writers : readers;
    RC_ASSERT(first_set[size_t(offset)].count(first) == 1);
    RC_ASSERT(second_set[size_t(offset)].count(second) == 1);
  });
  CHECK(races > 0);  // both outcomes were drawn
  CHECK(clean > 0);
}

TEST_CASE("race detector: atomics from every block are no race", "[cuda][emulation]") {
  DeviceArray<int> counter(1);
  REQUIRE(cudaMemset(counter.data, 0, sizeof(int)) == cudaSuccess);
  test::racy::atomic_counter(counter.data, 6);
  REQUIRE(synchronize().empty());
  int total = 0;
  REQUIRE(cudaMemcpy(&total, counter.data, sizeof total, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(total == 6 * 64);
}

TEST_CASE("race detector: lanes of a warp are ordered by __syncwarp, and only by it", "[cuda][emulation]") {
  DeviceArray<float> out(32);
  test::racy::warp_exchange(out.data, true);
  REQUIRE(synchronize().empty());
  std::vector<float> back(32);
  REQUIRE(cudaMemcpy(back.data(), out.data, 32 * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
  for (int lane = 0; lane < 32; ++lane) CHECK(back[size_t(lane)] == float(31 - lane) * 2.0f);
  test::racy::warp_exchange(out.data, false);
  CHECK_THAT(synchronize(), Contains("shared-memory race") && Contains(line(test::racy::warp_write_line)) &&
                                Contains(line(test::racy::warp_read_line)));
}

TEST_CASE("race detector: reading a cp.async destination before the wait that completes it", "[cuda][emulation]") {
  DeviceArray<float> global(64), out(16);
  std::vector<float> values(64);
  for (int i = 0; i < 64; ++i) values[size_t(i)] = float(i);
  REQUIRE(cudaMemcpy(global.data, values.data(), sizeof(float) * 64, cudaMemcpyHostToDevice) == cudaSuccess);
  test::racy::async_tile(global.data, out.data, true);
  REQUIRE(synchronize().empty());
  std::vector<float> back(16);
  REQUIRE(cudaMemcpy(back.data(), out.data, 16 * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
  for (int t = 0; t < 16; ++t) CHECK(back[size_t(t)] == float((4 * t + 7) % 64));
  test::racy::async_tile(global.data, out.data, false);
  CHECK_THAT(synchronize(), Contains("cp.async copy not yet waited for") &&
                                Contains(line(test::racy::async_issue_line)) &&
                                Contains(line(test::racy::async_read_line)));
}

namespace {

// Counts what the memory trace reports, per kind.
struct CountingObserver : emu::MemoryObserver {
  int launches = 0, ends = 0, shared_loads = 0, shared_stores = 0, global_loads = 0, global_stores = 0, atomics = 0;
  std::string name;
  void launch_begin(const emu::KernelLaunch& launch) override {
    ++launches;
    name = launch.name;
  }
  void access(const emu::MemoryAccess& a) override {
    if (a.atomic) ++atomics;
    else if (a.space == emu::MemorySpace::Shared) ++(a.store ? shared_stores : shared_loads);
    else ++(a.store ? global_stores : global_loads);
  }
  void launch_end(const emu::KernelLaunch&) override { ++ends; }
};

}  // namespace

TEST_CASE("memory trace: an observer sees each access of kernel code once, classified", "[cuda][emulation]") {
  CountingObserver seen;
  emu::set_memory_observer(&seen);
  DeviceArray<float> out(64);
  test::racy::shared_neighbour(out.data, true);
  const std::string fault = synchronize();
  emu::set_memory_observer(nullptr);
  REQUIRE(fault.empty());
  CHECK(seen.launches == 1);
  CHECK(seen.ends == 1);
  CHECK(seen.name == "shared_neighbour_kernel");
  // 64 threads: cell[t] = ..., then out[t] = cell[t + 1]: one store and one
  // load of shared memory and one global store each; the thread's locals and
  // arguments live on its own stack and are not reported.
  CHECK(seen.shared_stores == 64);
  CHECK(seen.shared_loads == 64);
  CHECK(seen.global_stores == 64);
  CHECK(seen.global_loads == 0);
  CHECK(seen.atomics == 0);

  CountingObserver counted;
  emu::set_memory_observer(&counted);
  DeviceArray<int> counter(1);
  REQUIRE(cudaMemset(counter.data, 0, sizeof(int)) == cudaSuccess);
  test::racy::atomic_counter(counter.data, 3);
  REQUIRE(synchronize().empty());
  emu::set_memory_observer(nullptr);
  CHECK(counted.atomics == 3 * 64);
  CHECK(counted.global_stores + counted.global_loads == 0);
}

TEST_CASE("a vector access off its alignment faults, as on a GPU, naming file and line", "[cuda][emulation]") {
  // A CPU loads a float4 at any address; a GPU faults ("misaligned address").
  // ASTRAI_VECTOR_PTR (cuda/kernels/vector_pointer.cuh), which every vector
  // access of the kernels goes through, makes the emulated device fault too.
  DeviceArray<float> x(4 * 8 + 1), out(8);
  std::vector<float> values(4 * 8 + 1);
  for (size_t i = 0; i < values.size(); ++i) values[i] = float(i);
  REQUIRE(cudaMemcpy(x.data, values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
  test::racy::vector_load(x.data, out.data, 8);  // cudaMalloc's pointer: 256-byte aligned
  REQUIRE(synchronize().empty());
  float first = 0.0f;
  REQUIRE(cudaMemcpy(&first, out.data, sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(first == 0.0f + 1.0f + 2.0f + 3.0f);
  test::racy::vector_load(x.data + 1, out.data, 8);  // 4 bytes past a 16-byte boundary
  const std::string fault = synchronize();
  INFO(fault);
  CHECK(fault.find("16-byte vector access") != std::string::npos);
  CHECK(fault.find("4 bytes past a 16-byte boundary") != std::string::npos);
  CHECK(fault.find(line(test::racy::vector_load_line)) != std::string::npos);
}
