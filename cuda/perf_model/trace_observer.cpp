#include "cuda/perf_model/trace_observer.h"

#include <utility>

namespace astrai::cuda::perf {

void TraceObserver::launch_begin(const emu::KernelLaunch& launch) {
  launch_ = TracedLaunch{};
  launch_.name = launch.name;
  launch_.grid = launch.grid;
  launch_.block = launch.block;
  launch_.dynamic_smem = launch.dynamic_smem;
  launch_.blocks = static_cast<long long>(launch.grid.x) * launch.grid.y * launch.grid.z;
  stride_ = (launch_.blocks + max_traced_ - 1) / max_traced_;
  if (stride_ < 1) stride_ = 1;
  current_block_ = -1;
  sectors_.clear();
  open_ = true;
}

void TraceObserver::finish_block() {
  if (current_block_ < 0) return;
  block_.finish(launch_.totals, sectors_);
  ++launch_.traced_blocks;
  current_block_ = -1;
}

void TraceObserver::access(const emu::MemoryAccess& a) {
  if (!open_ || a.block % stride_ != 0) return;
  if (static_cast<long long>(a.block) != current_block_) {
    finish_block();
    current_block_ = a.block;
  }
  block_.add(int(a.thread), reinterpret_cast<std::uintptr_t>(a.pc), reinterpret_cast<std::uintptr_t>(a.address),
             a.bytes, a.store, a.space == emu::MemorySpace::Shared ? Space::Shared : Space::Global);
}

void TraceObserver::launch_end(const emu::KernelLaunch&) {
  if (!open_) return;
  finish_block();
  launch_.totals.unique_sectors = sectors_.size();
  // Blocks with no global access at all are not counted as traced; scale by the blocks sampled.
  const long long sampled = (launch_.blocks + stride_ - 1) / stride_;
  launch_.unique_bytes = 32.0 * double(sectors_.size()) * double(launch_.blocks) / double(sampled);
  done_.push_back(std::move(launch_));
  sectors_.clear();
  open_ = false;
}

std::vector<TracedLaunch> TraceObserver::take() { return std::exchange(done_, {}); }

}  // namespace astrai::cuda::perf
