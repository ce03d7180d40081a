// The emulator's access stream (cuda/emulation/memory_trace.h) summed per
// kernel launch: what the performance report reads. Emulated build only.
//
// Tracing every block of an 8B-shaped launch would take minutes, so a launch
// of more than `max_traced_blocks` blocks is sampled: every k-th block is
// traced (k = ceil(blocks / max_traced_blocks)), and the totals are for the
// traced blocks. Blocks of one launch run the same code on different data,
// so per-instruction figures (sectors per request, wavefronts) carry over;
// unique bytes are scaled by blocks / traced blocks, which counts data every
// block reads (a decode GEMM's input row) once per traced block instead of
// once: an overestimate as small as that shared data is.
#pragma once

#include <mutex>
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
  AccessTotals totals;  // of the traced blocks
  double unique_bytes = 0;  // estimated over all blocks (see above)
};

class TraceObserver final : public emu::MemoryObserver {
 public:
  explicit TraceObserver(long long max_traced_blocks = 256) : max_traced_(max_traced_blocks) {}
  void launch_begin(const emu::KernelLaunch& launch) override;
  void access(const emu::MemoryAccess& access) override;
  void launch_end(const emu::KernelLaunch& launch) override;
  // The launches finished since the last call.
  std::vector<TracedLaunch> take();

 private:
  void finish_block();
  long long max_traced_;
  long long stride_ = 1;
  bool open_ = false;
  long long current_block_ = -1;
  TracedLaunch launch_;
  BlockAccessCollector block_;
  std::unordered_set<std::uint64_t> sectors_;
  std::vector<TracedLaunch> done_;
};

}  // namespace astrai::cuda::perf
