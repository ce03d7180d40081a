// The emulated device's fixed sizes, shared by the block runner, the race
// detector and the memory-access hooks (one definition each, so that the
// files agree and compile together as one unity file).
#pragma once

#include <cstddef>
#include <cstdint>

namespace astrai::emu {

inline constexpr int kWarpSize = 32;  // threads per warp, as on every NVIDIA GPU
// The host's page: a device allocation's mapping never shares one with other
// memory, so "is this address device memory" is a question per page.
inline constexpr uintptr_t kHostPageBytes = 4096;
// Recently touched pages, looked up direct-mapped by page number before the
// hash map (a kernel's accesses stay on a few pages for long runs).
inline constexpr size_t kPageCacheSlots = 256;

}  // namespace astrai::emu
