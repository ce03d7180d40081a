// The race detector's shadow state and checks. See race_detector.h.
//
// Cells are small on purpose (every instrumented access walks one per byte):
// code addresses are kept as 32-bit offsets from this file's code (the
// kernels are linked into the same program), barrier intervals as their low
// 32 bits, warp intervals as their low 16 bits (two accesses compare equal
// only if exactly 2^16 warp collectives lie between them).
#include "cuda/emulation/race_detector.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "cuda/emulation/access_context.h"
#include "cuda/emulation/block_runner.h"
#include "cuda/emulation/device_constants.h"

namespace astrai::emu {
namespace {

std::atomic<bool> g_enabled{[] {
  const char* s = std::getenv("ASTRAI_EMULATION_RACECHECK");
  return !(s != nullptr && std::strcmp(s, "0") == 0);
}()};

int32_t pc_offset(const void* pc) {
  return int32_t(reinterpret_cast<intptr_t>(pc) - reinterpret_cast<intptr_t>(&race_check));
}
const void* pc_at(int32_t offset) {
  return reinterpret_cast<const void*>(reinterpret_cast<intptr_t>(&race_check) + offset);
}

// One access as the shadow keeps it.
struct Access {
  uint32_t interval = 0;  // 0: none
  int32_t pc = 0;
  uint16_t thread = 0;
  uint16_t warp_interval = 0;
};

struct SharedCell {
  Access write;
  Access read;                        // the reader kept for a report
  bool reads_by_several = false;      // more than one unordered reader since the last write
  int8_t readers_warp = -1;           // the warp of every such reader, or -1 for several warps
  uint16_t latest_read_warp_interval = 0;
};
static_assert(sizeof(SharedCell) == 28);

// A cp.async copy into a byte of shared memory, issued in block `block` and not complete.
struct PendingCell {
  uint64_t block = 0;
  const void* pc = nullptr;
  uint32_t thread = 0;
};

// Per byte of global memory, for one launch.
struct GlobalCell {
  uint32_t launch = 0;  // the launch serial it belongs to; another: empty
  int32_t write_block = -1;
  int32_t read_block = -1;
  int32_t write_pc = 0, read_pc = 0;
  uint16_t write_thread = 0, read_thread = 0;
  uint8_t reads_by_several_blocks = 0;
  uint8_t padding[3] = {};  // named, so that cells compare with memcmp
};
static_assert(sizeof(GlobalCell) == 28);

struct RaceState {
  const KernelLaunch* launch = nullptr;
  uint32_t launch_serial = 0;
  std::vector<SharedCell> dynamic_shadow;
  std::vector<SharedCell> static_shadow;
  std::vector<PendingCell> dynamic_pending, static_pending;
  size_t pending_bytes = 0;  // bytes of cp.async copies in flight in this block
  std::unordered_map<uintptr_t, GlobalCell*> pages;  // the global pages this launch touched
  std::vector<std::unique_ptr<GlobalCell[]>> page_pool;  // every page ever made; reused across launches
  size_t pages_used = 0;
  struct Slot {
    uintptr_t page = ~uintptr_t(0);
    GlobalCell* cells = nullptr;
  } page_cache[kPageCacheSlots];
};

thread_local RaceState t_state;

uint32_t warp_of(uint32_t thread) { return thread / uint32_t(kWarpSize); }

Access now(const void* pc) {
  const AccessContext& c = t_access;
  return Access{uint32_t(c.interval), pc_offset(pc), uint16_t(c.thread), uint16_t(c.warp_interval)};
}

// Whether an earlier access is ordered before the running thread's access.
bool ordered_before(const Access& earlier) {
  const AccessContext& c = t_access;
  if (earlier.interval != uint32_t(c.interval)) return true;  // a barrier (or another block) between them
  if (earlier.thread == c.thread) return true;
  return warp_of(earlier.thread) == warp_of(c.thread) && earlier.warp_interval != uint16_t(c.warp_interval);
}

// Whether every read since the last write is ordered before the running thread's access.
bool reads_ordered_before(const SharedCell& cell) {
  const AccessContext& c = t_access;
  if (cell.read.interval == 0) return true;
  if (!cell.reads_by_several) return ordered_before(cell.read);
  if (cell.read.interval != uint32_t(c.interval)) return true;
  return cell.readers_warp == int8_t(warp_of(c.thread)) &&
         cell.latest_read_warp_interval != uint16_t(c.warp_interval);
}

std::string coordinates(uint32_t linear, dim3 d) {
  std::ostringstream out;  // (not "(" + std::string: GCC 12's -Wrestrict false positive)
  out << "(" << linear % d.x << "," << linear / d.x % d.y << "," << linear / (d.x * d.y) << ")";
  return out.str();
}

std::string shared_where(uintptr_t address) {
  const AccessContext& c = t_access;
  if (address >= c.dynamic_begin && address < c.dynamic_end)
    return "byte " + std::to_string(address - c.dynamic_begin) + " of dynamic shared memory";
  return "static __shared__ memory (byte " + std::to_string(address - c.static_begin) + " of the TLS block)";
}

std::string shared_access(const char* kind, uint32_t thread, const void* pc) {
  return std::string(kind) + " by thread " + coordinates(thread, t_state.launch->block) + " at " +
         describe_code_address(pc);
}

[[noreturn]] void report_shared(const char* hazard, uintptr_t address, const std::string& first,
                                const std::string& second, const char* why = ", with no barrier between them") {
  fault_from_fiber("kernel " + t_state.launch->name + ", block " + coordinates(t_access.block, t_state.launch->grid) +
                   ": shared-memory race (" + hazard + ") on " + shared_where(address) + ": " + first + " and " +
                   second + why);
}

bool in_dynamic(uintptr_t address) { return address >= t_access.dynamic_begin && address < t_access.dynamic_end; }

PendingCell* pending_cells(uintptr_t address) {
  const AccessContext& c = t_access;
  return in_dynamic(address) ? &t_state.dynamic_pending[address - c.dynamic_begin]
                             : &t_state.static_pending[address - c.static_begin];
}

void check_pending(uintptr_t address, size_t bytes, bool store, const void* pc) {
  const PendingCell* pending = pending_cells(address);
  for (size_t i = 0; i < bytes; ++i)
    if (pending[i].block == t_access.block_serial)
      report_shared("access to the destination of a cp.async copy not yet waited for", address + i,
                    shared_access("cp.async issued", pending[i].thread, pending[i].pc),
                    shared_access(store ? "write" : "read", t_access.thread, pc),
                    " (no cp_async_wait covering the copy)");
}

void check_shared(SharedCell& cell, uintptr_t address, bool store, const void* pc) {
  const AccessContext& c = t_access;
  if (cell.write.interval != 0 && !ordered_before(cell.write))
    report_shared(store ? "write after write" : "read after write", address,
                  shared_access("write", cell.write.thread, pc_at(cell.write.pc)),
                  shared_access(store ? "write" : "read", c.thread, pc));
  const bool reads_ordered = reads_ordered_before(cell);
  if (store) {
    if (!reads_ordered)
      report_shared("write after read", address, shared_access("read", cell.read.thread, pc_at(cell.read.pc)),
                    shared_access("write", c.thread, pc));
    cell.write = now(pc);
    cell.read = Access{};
    cell.reads_by_several = false;
  } else if (reads_ordered) {
    cell.read = now(pc);
    cell.reads_by_several = false;
    cell.readers_warp = int8_t(warp_of(c.thread));
    cell.latest_read_warp_interval = uint16_t(c.warp_interval);
  } else {
    cell.reads_by_several = true;
    if (cell.readers_warp != int8_t(warp_of(c.thread))) cell.readers_warp = -1;
    cell.latest_read_warp_interval = uint16_t(c.warp_interval);
  }
}

GlobalCell* global_page(uintptr_t page) {
  RaceState& s = t_state;
  RaceState::Slot& slot = s.page_cache[page % kPageCacheSlots];
  if (slot.page == page) return slot.cells;
  auto [it, inserted] = s.pages.try_emplace(page, nullptr);
  if (inserted) {
    if (s.pages_used == s.page_pool.size()) s.page_pool.push_back(std::make_unique<GlobalCell[]>(kHostPageBytes));
    it->second = s.page_pool[s.pages_used++].get();
  }
  slot = RaceState::Slot{page, it->second};
  return it->second;
}

std::string global_access(const char* kind, int32_t block, uint32_t thread, const void* pc) {
  return std::string(kind) + " by block " + coordinates(uint32_t(block), t_state.launch->grid) + " thread " +
         coordinates(thread, t_state.launch->block) + " at " + describe_code_address(pc);
}

[[noreturn]] void report_global(const char* hazard, uintptr_t address, const std::string& first,
                                const std::string& second) {
  std::ostringstream where;
  where << reinterpret_cast<const void*>(address);
  fault_from_fiber("kernel " + t_state.launch->name + ": global-memory race (" + hazard + ") at device address " +
                   where.str() + ": " + first + " and " + second +
                   " (the blocks of one launch are unordered; use an atomic or another launch)");
}

void check_global(GlobalCell& cell, uintptr_t address, bool store, const void* pc) {
  const AccessContext& c = t_access;
  if (cell.launch != t_state.launch_serial) cell = GlobalCell{t_state.launch_serial};
  const int32_t block = int32_t(c.block);
  if (cell.write_block >= 0 && cell.write_block != block)
    report_global(store ? "write after write" : "read after write", address,
                  global_access("write", cell.write_block, cell.write_thread, pc_at(cell.write_pc)),
                  global_access(store ? "write" : "read", block, c.thread, pc));
  if (store) {
    if (cell.read_block >= 0 && (cell.read_block != block || cell.reads_by_several_blocks))
      report_global("write after read", address,
                    global_access("read", cell.read_block, cell.read_thread, pc_at(cell.read_pc)),
                    global_access("write", block, c.thread, pc));
    cell.write_block = block;
    cell.write_thread = uint16_t(c.thread);
    cell.write_pc = pc_offset(pc);
  } else if (cell.read_block < 0) {
    cell.read_block = block;
    cell.read_thread = uint16_t(c.thread);
    cell.read_pc = pc_offset(pc);
  } else if (cell.read_block != block) {
    cell.reads_by_several_blocks = 1;
  }
}

}  // namespace

void set_race_detection(bool on) { g_enabled = on; }
bool race_detection() { return g_enabled.load(std::memory_order_relaxed); }

void race_launch_begin(const KernelLaunch& launch) {
  RaceState& s = t_state;
  s.launch = &launch;
  if (++s.launch_serial == 0) {  // wrapped: clear every cell so no old serial matches
    for (auto& page : s.page_pool) std::fill_n(page.get(), kHostPageBytes, GlobalCell{});
    s.launch_serial = 1;
  }
  s.pages.clear();
  s.pages_used = 0;
  for (RaceState::Slot& slot : s.page_cache) slot = RaceState::Slot{};
}

void race_launch_end() {
  RaceState& s = t_state;
  s.launch = nullptr;
  s.pages.clear();
  s.pages_used = 0;
  for (RaceState::Slot& slot : s.page_cache) slot = RaceState::Slot{};
}

void race_block_begin() {
  RaceState& s = t_state;
  const AccessContext& c = t_access;
  // Cells of earlier blocks carry other intervals, so they never match; only the sizes change.
  const size_t dynamic_bytes = c.dynamic_end - c.dynamic_begin, static_bytes = c.static_end - c.static_begin;
  if (s.dynamic_shadow.size() < dynamic_bytes) s.dynamic_shadow.resize(dynamic_bytes);
  if (s.static_shadow.size() < static_bytes) s.static_shadow.resize(static_bytes);
  s.pending_bytes = 0;
}

void race_copy_pending(uintptr_t shared_address, size_t bytes, const void* pc, bool pending) {
  RaceState& s = t_state;
  const AccessContext& c = t_access;
  if (s.dynamic_pending.size() < s.dynamic_shadow.size()) s.dynamic_pending.resize(s.dynamic_shadow.size());
  if (s.static_pending.size() < s.static_shadow.size()) s.static_pending.resize(s.static_shadow.size());
  PendingCell* cells = pending_cells(shared_address);
  for (size_t i = 0; i < bytes; ++i) {
    if (pending && cells[i].block == c.block_serial)
      report_shared("two cp.async copies in flight into one byte", shared_address + i,
                    shared_access("cp.async issued", cells[i].thread, cells[i].pc),
                    shared_access("cp.async issued", c.thread, pc), "");
    cells[i] = pending ? PendingCell{c.block_serial, pc, c.thread} : PendingCell{};
  }
  if (pending) s.pending_bytes += bytes;
  else s.pending_bytes -= std::min(s.pending_bytes, bytes);
}

void race_check(uintptr_t address, size_t bytes, bool store, MemorySpace space, const void* pc) {
  const AccessContext& c = t_access;
  RaceState& s = t_state;
  if (space == MemorySpace::Shared) {
    if (s.pending_bytes != 0) check_pending(address, bytes, store, pc);
    SharedCell* cells = in_dynamic(address) ? &s.dynamic_shadow[address - c.dynamic_begin]
                                            : &s.static_shadow[address - c.static_begin];
    // The bytes of one access usually share one history (the last access
    // covered them all): then the first byte's check stands for the rest.
    const SharedCell before = cells[0];
    check_shared(cells[0], address, store, pc);
    for (size_t i = 1; i < bytes; ++i) {
      if (std::memcmp(&cells[i], &before, sizeof before) == 0) cells[i] = cells[0];
      else check_shared(cells[i], address + i, store, pc);
    }
  } else {
    // An access never crosses a page here: the kernels' accesses are naturally aligned.
    GlobalCell* cells = global_page(address / kHostPageBytes);
    GlobalCell& first = cells[address % kHostPageBytes];
    if (first.launch != s.launch_serial) first = GlobalCell{s.launch_serial};
    const GlobalCell before = first;
    check_global(first, address, store, pc);
    for (size_t i = 1; i < bytes; ++i) {
      const uintptr_t a = address + i;
      GlobalCell& cell = a / kHostPageBytes == address / kHostPageBytes
                             ? cells[a % kHostPageBytes]
                             : global_page(a / kHostPageBytes)[a % kHostPageBytes];
      if (cell.launch != s.launch_serial) cell = GlobalCell{s.launch_serial};
      if (std::memcmp(&cell, &before, sizeof before) == 0) cell = first;
      else check_global(cell, a, store, pc);
    }
  }
}

}  // namespace astrai::emu
