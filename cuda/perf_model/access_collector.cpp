#include "cuda/perf_model/access_collector.h"

namespace astrai::cuda::perf {

void AccessTotals::add(const AccessTotals& o) {
  global_instructions += o.global_instructions;
  global_requested_bytes += o.global_requested_bytes;
  global_sectors += o.global_sectors;
  shared_instructions += o.shared_instructions;
  wavefronts += o.wavefronts;
  ideal_wavefronts += o.ideal_wavefronts;
  unique_sectors += o.unique_sectors;
  for (const auto& [pc, s] : o.sites) {
    SiteStats& t = sites[pc];
    t.instructions += s.instructions;
    t.requested_bytes += s.requested_bytes;
    t.sectors += s.sectors;
    t.wavefronts += s.wavefronts;
    t.ideal_wavefronts += s.ideal_wavefronts;
    t.store = s.store;
    t.space = s.space;
  }
}

void BlockAccessCollector::add(int thread, std::uintptr_t pc, std::uintptr_t address, std::uint32_t bytes, bool store,
                               Space space) {
  // The occurrence of (thread, pc): pc mixed with the thread index into one key.
  const std::uint64_t seen_key = (std::uint64_t(pc) << 11) ^ std::uint64_t(thread);
  const std::uint32_t occurrence = seen_[seen_key]++;
  Instruction& ins = instructions_[Key{thread / 32, pc, occurrence}];
  if (ins.lanes.empty()) {
    ins.store = store;
    ins.space = space;
  }
  ins.lanes.push_back(LaneAccess{thread % 32, address, bytes});
}

void BlockAccessCollector::finish(AccessTotals& totals, std::unordered_set<std::uint64_t>& sectors) {
  for (const auto& [key, ins] : instructions_) {
    SiteStats& site = totals.sites[key.pc];
    site.instructions += 1;
    site.store = ins.store;
    site.space = ins.space;
    if (ins.space == Space::Global) {
      const GlobalCost c = global_cost(ins.lanes);
      totals.global_instructions += 1;
      totals.global_requested_bytes += c.requested_bytes;
      totals.global_sectors += c.sectors;
      site.requested_bytes += c.requested_bytes;
      site.sectors += c.sectors;
      for (const LaneAccess& a : ins.lanes)
        for (std::uintptr_t s = a.address / 32; s <= (a.address + a.bytes - 1) / 32; ++s) sectors.insert(s);
    } else {
      const SharedCost c = shared_cost(ins.lanes);
      totals.shared_instructions += 1;
      totals.wavefronts += c.wavefronts;
      totals.ideal_wavefronts += c.ideal_wavefronts;
      site.wavefronts += c.wavefronts;
      site.ideal_wavefronts += c.ideal_wavefronts;
    }
  }
  instructions_.clear();
  seen_.clear();
}

}  // namespace astrai::cuda::perf
