#include "cuda/perf_model/trace_observer.h"

#include <utility>

namespace astrai::cuda::perf {

void TraceObserver::launch_begin(const emu::KernelLaunch& launch) {
  launch_ = TracedLaunch{};
  // The instance's demangled name, which ptxas's table also has; the launch
  // expression ("kernel<Elem>", or a variable's name) when unknown.
  launch_.name = emu::code_function_name(launch.function);
  if (launch_.name.empty()) launch_.name = launch.name;
  launch_.grid = launch.grid;
  launch_.block = launch.block;
  launch_.dynamic_smem = launch.dynamic_smem;
  launch_.blocks = static_cast<long long>(launch.grid.x) * launch.grid.y * launch.grid.z;
  stride_ = (launch_.blocks + max_traced_ - 1) / max_traced_;
  if (stride_ < 1) stride_ = 1;
  current_block_ = -1;
  sectors_.clear();
  touched_.clear();
  pending_.open = false;
  open_ = true;
}

int TraceObserver::source_line_id(const void* pc) {
  if (auto it = line_of_pc_.find(pc); it != line_of_pc_.end()) return it->second;
  const std::string line = emu::describe_code_address(pc);
  const int id = line_ids_.emplace(line, int(line_ids_.size())).first->second;
  line_of_pc_.emplace(pc, id);
  return id;
}

void TraceObserver::flush_pending() {
  if (!pending_.open) return;
  block_.add(pending_.thread, pending_.pc, pending_.begin, std::uint32_t(pending_.end - pending_.begin), pending_.store,
             pending_.space);
  pending_.open = false;
}

void TraceObserver::finish_block() {
  flush_pending();
  if (current_block_ < 0) return;
  block_.finish(launch_.totals, sectors_);
  ++launch_.traced_blocks;
  current_block_ = -1;
}

void TraceObserver::access(const emu::MemoryAccess& a) {
  if (!open_) return;
  const auto address = reinterpret_cast<std::uintptr_t>(a.address);
  if (a.space == emu::MemorySpace::Global && a.bytes > 0)
    for (std::uintptr_t sector = address / 32; sector <= (address + a.bytes - 1) / 32; ++sector)
      touched_[sector / 64] |= std::uint64_t(1) << (sector % 64);
  if (a.block % stride_ != 0) return;
  if (static_cast<long long>(a.block) != current_block_) {
    finish_block();
    current_block_ = a.block;
    per_thread_.assign(size_t(launch_.block.x) * launch_.block.y * launch_.block.z, 0);
  }
  if (a.thread >= per_thread_.size() || per_thread_[a.thread] >= max_per_thread_) return;
  ++per_thread_[a.thread];
  const Space space = a.space == emu::MemorySpace::Shared ? Space::Shared : Space::Global;
  const int line = source_line_id(a.pc);
  if (pending_.open && pending_.thread == int(a.thread) && pending_.store == a.store && pending_.space == space &&
      pending_.line == line && pending_.end == address && pending_.begin / 16 == (address + a.bytes - 1) / 16) {
    pending_.end = address + a.bytes;  // the next piece of a split vector access
    return;
  }
  flush_pending();
  pending_ = Pending{true, int(a.thread), line, reinterpret_cast<std::uintptr_t>(a.pc), address, address + a.bytes,
                     a.store, space};
}

void TraceObserver::launch_end(const emu::KernelLaunch&) {
  if (!open_) return;
  finish_block();
  launch_.totals.unique_sectors = sectors_.size();
  std::uint64_t touched = 0;
  for (const auto& [chunk, bits] : touched_) touched += std::uint64_t(__builtin_popcountll(bits));
  launch_.unique_bytes = 32.0 * double(touched);
  done_.push_back(std::move(launch_));
  sectors_.clear();
  touched_.clear();
  open_ = false;
}

std::vector<TracedLaunch> TraceObserver::take() { return std::exchange(done_, {}); }

}  // namespace astrai::cuda::perf
