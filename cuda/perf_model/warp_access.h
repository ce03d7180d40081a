// What one warp-level memory instruction costs, from the addresses its lanes
// touch: the rules the hardware applies, written out so the performance
// report can apply them to the emulator's access stream.
//
// Global memory moves in 32-byte sectors: a warp's load touches every sector
// any active lane's bytes fall in, once (NVIDIA CUDA C++ Best Practices
// Guide, "Coalesced access to global memory"). Efficiency is the bytes the
// lanes asked for over the bytes those sectors hold: 32 lanes reading 4
// consecutive aligned bytes each touch 4 sectors (100%); a stride of two
// words touches 8 (50%).
//
// Shared memory has 32 banks of 4-byte words; one wavefront serves at most
// one word per bank, any number of lanes reading the same word (a
// broadcast). A warp's request of w bytes per lane is split into phases of
// 128 bytes: 32 lanes for w <= 4, half-warps for w = 8, quarter-warps for
// w = 16; within a phase the wavefronts are the largest number of distinct
// words that fall in one bank. The ideal is one wavefront per phase that has
// an active lane (Programming Guide, "Shared Memory" for compute capability
// 5.x and later; Nsight Compute counts the same "wavefronts").
#pragma once

#include <cstdint>
#include <span>

namespace astrai::cuda::perf {

// One lane's part of a warp-level access.
struct LaneAccess {
  int lane;               // 0..31
  std::uintptr_t address;
  std::uint32_t bytes;    // 1, 2, 4, 8 or 16
};

struct GlobalCost {
  std::uint64_t requested_bytes = 0;  // distinct bytes the lanes asked for
  std::uint64_t sectors = 0;          // 32-byte sectors touched
  double efficiency() const { return sectors ? double(requested_bytes) / double(sectors * 32) : 1.0; }
};

struct SharedCost {
  std::uint64_t wavefronts = 0;        // what the request takes
  std::uint64_t ideal_wavefronts = 0;  // one per phase with an active lane
};

GlobalCost global_cost(std::span<const LaneAccess> lanes);
SharedCost shared_cost(std::span<const LaneAccess> lanes);

}  // namespace astrai::cuda::perf
