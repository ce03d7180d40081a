// The emulator's access stream (cuda/emulation/memory_trace.h) summed per
// kernel launch: what the performance report reads. Emulated build only.
//
// Unique bytes (the distinct 32-byte sectors a launch touches in global
// memory: what HBM moves when L2 catches re-reads within the launch) are
// counted over every block, in a bitmap of 64-sector chunks. The warp-level
// pricing (sectors per request, bank conflicts) would need every access of a
// block held until its warp's last lane has run, so it is sampled: every k-th
// block (k = ceil(blocks / max_traced_blocks)), and in it each thread's first
// `max_accesses_per_thread` accesses. Blocks of a launch run the same code on
// other data, and a thread's first accesses go through the same instructions
// as its later ones, so the per-instruction figures carry over.
//
// A vector access split back into scalars: the host compiler turns
// `*reinterpret_cast<const float4*>(p)` into four 4-byte loads where nvcc
// issues one 16-byte load (LDG.E.128). Consecutive accesses by one thread
// from one source line (inlining included), in the same direction and space,
// contiguous and within one aligned 16-byte window, are merged back into one.
// An unrolled scalar loop over aligned data looks the same and is counted as
// vectorized: optimistic, for loops nvcc does not vectorize either.
#pragma once

#include <mutex>
#include <unordered_map>
#include <string>
#include <unordered_set>
#include <vector>

#include "cuda/emulation/memory_trace.h"
#include "cuda/perf_model/access_collector.h"

namespace astrai::cuda::perf {

struct TracedLaunch {
  std::string name;
  dim3 grid, block;
  size_t dynamic_smem = 0;
  long long blocks = 0, traced_blocks = 0;
  AccessTotals totals;      // of the traced blocks
  double unique_bytes = 0;  // over all blocks: distinct global sectors x 32
};

class TraceObserver final : public emu::MemoryObserver {
 public:
  explicit TraceObserver(long long max_traced_blocks = 64, int max_accesses_per_thread = 512)
      : max_traced_(max_traced_blocks), max_per_thread_(max_accesses_per_thread) {}
  void launch_begin(const emu::KernelLaunch& launch) override;
  void access(const emu::MemoryAccess& access) override;
  void launch_end(const emu::KernelLaunch& launch) override;
  // The launches finished since the last call.
  std::vector<TracedLaunch> take();

 private:
  void finish_block();
  void flush_pending();
  int source_line_id(const void* pc);
  long long max_traced_;
  int max_per_thread_;
  std::vector<int> per_thread_;  // accesses collected from each thread of the current block
  long long stride_ = 1;
  bool open_ = false;
  long long current_block_ = -1;
  TracedLaunch launch_;
  BlockAccessCollector block_;
  std::unordered_set<std::uint64_t> sectors_;       // of the traced blocks (the collector's)
  std::unordered_map<std::uint64_t, std::uint64_t> touched_;  // every block: chunk of 64 sectors -> bit per sector
  std::vector<TracedLaunch> done_;
  // The access being merged (see above), and each pc's source line as a number.
  struct Pending {
    bool open = false;
    int thread = 0, line = 0;
    std::uintptr_t pc = 0, begin = 0, end = 0;
    bool store = false;
    Space space = Space::Global;
  } pending_;
  std::unordered_map<const void*, int> line_of_pc_;
  std::unordered_map<std::string, int> line_ids_;
};

}  // namespace astrai::cuda::perf
