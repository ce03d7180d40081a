// Turns one block's memory accesses, as the emulator sees them (one CUDA
// thread at a time, in whatever order the fibers run), back into the
// warp-level instructions a GPU would issue, and prices each with
// warp_access.h's rules.
//
// The n-th time lane L of a warp executes the access at program counter P is
// the same warp-level instruction as the n-th time every other lane of that
// warp executes P: lanes that branch around an access simply do not appear in
// it (inactive lanes), as on the GPU. Accesses by the fiber's own stack
// (locals the host compiler spilled) never reach here: the emulator filters
// them out.
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cuda/perf_model/warp_access.h"

namespace astrai::cuda::perf {

enum class Space : std::uint8_t { Global, Shared };

// What the accesses of one program counter cost, summed over its warp-level instructions.
struct SiteStats {
  std::uint64_t instructions = 0;
  std::uint64_t requested_bytes = 0, sectors = 0;           // global
  std::uint64_t wavefronts = 0, ideal_wavefronts = 0;       // shared
  bool store = false;
  Space space = Space::Global;
};

// Sums over a launch (or the blocks of it that were traced).
struct AccessTotals {
  std::uint64_t global_instructions = 0, global_requested_bytes = 0, global_sectors = 0;
  std::uint64_t shared_instructions = 0, wavefronts = 0, ideal_wavefronts = 0;
  std::uint64_t unique_sectors = 0;  // distinct 32-byte sectors over the traced blocks: what HBM moves once
  std::map<std::uintptr_t, SiteStats> sites;  // by program counter
  double sector_efficiency() const {
    return global_sectors ? double(global_requested_bytes) / double(global_sectors * 32) : 1.0;
  }
  double bytes_per_warp_load() const {
    return global_instructions ? double(global_requested_bytes) / double(global_instructions) : 0.0;
  }
  void add(const AccessTotals& other);  // unique_sectors adds: blocks' sector sets are merged by the caller
};

class BlockAccessCollector {
 public:
  void add(int thread, std::uintptr_t pc, std::uintptr_t address, std::uint32_t bytes, bool store, Space space);
  // Prices every instruction of the block, adds them to `totals`, inserts the
  // global sectors into `sectors` and forgets the block.
  void finish(AccessTotals& totals, std::unordered_set<std::uint64_t>& sectors);

 private:
  struct Key {
    int warp;
    std::uintptr_t pc;
    std::uint32_t occurrence;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      return std::hash<std::uintptr_t>()(k.pc) * 31u + std::size_t(k.warp) * 1000003u + k.occurrence;
    }
  };
  struct Instruction {
    bool store;
    Space space;
    std::vector<LaneAccess> lanes;
  };
  std::unordered_map<Key, Instruction, KeyHash> instructions_;
  std::unordered_map<std::uint64_t, std::uint32_t> seen_;  // (thread, pc) -> executions so far
};

}  // namespace astrai::cuda::perf
