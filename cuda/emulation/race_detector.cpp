// The race detector's shadow state and checks. See race_detector.h.
//
// Cells are small on purpose (every instrumented access walks one per byte):
// code addresses are kept as 32-bit offsets from this file's code (the
// kernels are linked into the same program), barrier intervals as their low
// 32 bits, warp intervals as their low 16 bits (two accesses compare equal
// only if exactly 2^16 warp collectives lie between them).
#include "cuda/emulation/race_detector.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
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

// One global access of the launch, as the log keeps it until the launch ends.
struct GlobalAccess {
  uintptr_t address = 0;
  int32_t pc = 0;
  uint32_t block = 0;
  uint16_t thread = 0;
  uint16_t bytes = 0;
  bool store = false;
};
static_assert(sizeof(GlobalAccess) == 24);

// One bit per byte of a host page of global memory.
using PageBits = std::array<uint64_t, kHostPageBytes / 64>;

// A page of global memory the launch touched: which of its bytes the running
// block read and wrote, and which the launch's blocks before it did.
struct GlobalPage {
  PageBits block_read{}, block_write{};
  PageBits launch_read{}, launch_write{};
  bool in_block = false;  // listed in RaceState::block_pages
};

void set_bits(PageBits& bits, size_t first, size_t count) {
  for (size_t i = first; i < first + count;) {
    const size_t word = i / 64, bit = i % 64, n = std::min<size_t>(64 - bit, first + count - i);
    bits[word] |= (n == 64 ? ~uint64_t(0) : ((uint64_t(1) << n) - 1) << bit);
    i += n;
  }
}

bool test_bit(const PageBits& bits, size_t i) { return (bits[i / 64] >> (i % 64)) & 1; }

// Per byte of global memory, when a conflict is replayed (replay_global).
struct GlobalCell {
  int32_t write_block = -1;
  int32_t read_block = -1;
  int32_t write_pc = 0, read_pc = 0;
  uint16_t write_thread = 0, read_thread = 0;
  bool reads_by_several_blocks = false;
};

struct RaceState {
  const KernelLaunch* launch = nullptr;
  std::vector<SharedCell> dynamic_shadow;
  std::vector<SharedCell> static_shadow;
  std::vector<PendingCell> dynamic_pending, static_pending;
  size_t pending_bytes = 0;  // bytes of cp.async copies in flight in this block
  // Global memory: the launch's accesses in the order they ran (read back
  // only to name a race); the pages it touched, with the running block's
  // list of its own.
  std::vector<GlobalAccess> log;
  std::unordered_map<uintptr_t, GlobalPage*> pages;
  std::vector<std::unique_ptr<GlobalPage>> page_pool;  // every page ever made; reused across launches
  size_t pages_used = 0;
  std::vector<GlobalPage*> block_pages;
  struct Slot {
    uintptr_t page = ~uintptr_t(0);
    GlobalPage* bits = nullptr;
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

std::string global_access(const char* kind, int32_t block, uint32_t thread, const void* pc) {
  return std::string(kind) + " by block " + coordinates(uint32_t(block), t_state.launch->grid) + " thread " +
         coordinates(thread, t_state.launch->block) + " at " + describe_code_address(pc);
}

std::string global_report(const char* hazard, uintptr_t address, const std::string& first, const std::string& second) {
  std::ostringstream where;
  where << reinterpret_cast<const void*>(address);
  return "kernel " + t_state.launch->name + ": global-memory race (" + hazard + ") at device address " + where.str() +
         ": " + first + " and " + second + " (the blocks of one launch are unordered; use an atomic or another launch)";
}

// One byte of `access` against the byte's history in the launch so far: the
// report of the race it completes, or nothing (the history updated).
std::optional<std::string> check_global(GlobalCell& cell, uintptr_t address, const GlobalAccess& access) {
  const int32_t block = int32_t(access.block);
  const void* pc = pc_at(access.pc);
  if (cell.write_block >= 0 && cell.write_block != block)
    return global_report(access.store ? "write after write" : "read after write", address,
                         global_access("write", cell.write_block, cell.write_thread, pc_at(cell.write_pc)),
                         global_access(access.store ? "write" : "read", block, access.thread, pc));
  if (access.store) {
    if (cell.read_block >= 0 && (cell.read_block != block || cell.reads_by_several_blocks))
      return global_report("write after read", address,
                           global_access("read", cell.read_block, cell.read_thread, pc_at(cell.read_pc)),
                           global_access("write", block, access.thread, pc));
    cell.write_block = block;
    cell.write_thread = access.thread;
    cell.write_pc = access.pc;
  } else if (cell.read_block < 0) {
    cell.read_block = block;
    cell.read_thread = access.thread;
    cell.read_pc = access.pc;
  } else if (cell.read_block != block) {
    cell.reads_by_several_blocks = true;
  }
  return std::nullopt;
}

GlobalPage& global_page(uintptr_t page) {
  RaceState& s = t_state;
  RaceState::Slot& slot = s.page_cache[page % kPageCacheSlots];
  if (slot.page == page) return *slot.bits;
  auto [it, inserted] = s.pages.try_emplace(page, nullptr);
  if (inserted) {
    if (s.pages_used == s.page_pool.size()) s.page_pool.push_back(std::make_unique<GlobalPage>());
    it->second = s.page_pool[s.pages_used++].get();
    *it->second = GlobalPage{};
  }
  slot = RaceState::Slot{page, it->second};
  return *it->second;
}

// Whether the running block read or wrote the byte at `address`.
bool block_touched(uintptr_t address) {
  const auto it = t_state.pages.find(address / kHostPageBytes);
  if (it == t_state.pages.end()) return false;
  const size_t i = address % kHostPageBytes;
  return test_bit(it->second->block_read, i) || test_bit(it->second->block_write, i);
}

// The running block touched bytes an earlier block of the launch wrote, or
// wrote bytes one read: replays the launch's log byte by byte, in the order
// the accesses ran, over the bytes the running block touched (the earlier
// blocks raced on no other byte, or their own check would have said so), so
// the report names the first racing access and the earlier one it races with.
std::string replay_global() {
  std::unordered_map<uintptr_t, GlobalCell> cells;
  for (const GlobalAccess& access : t_state.log)
    for (uintptr_t a = access.address; a < access.address + access.bytes; ++a) {
      if (!block_touched(a)) continue;
      if (auto report = check_global(cells[a], a, access)) return *report;
    }
  return "kernel " + t_state.launch->name + ": global-memory race (the race detector lost the accesses)";
}

void clear_pages() {
  RaceState& s = t_state;
  s.log.clear();
  s.pages.clear();
  s.pages_used = 0;
  s.block_pages.clear();
  for (RaceState::Slot& slot : s.page_cache) slot = RaceState::Slot{};
}

}  // namespace

void set_race_detection(bool on) { g_enabled = on; }
bool race_detection() { return g_enabled.load(std::memory_order_relaxed); }

void race_launch_begin(const KernelLaunch& launch) {
  RaceState& s = t_state;
  s.launch = &launch;
  clear_pages();
}

void race_launch_end() {
  RaceState& s = t_state;
  s.launch = nullptr;
  clear_pages();
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
    // Marked in the page's bits of the running block, and checked against
    // the other blocks' when the block ends (race_block_end): a block's own
    // accesses never race, so nothing is lost by waiting, and a byte costs a
    // bit, not a shadow cell. Logged to name a race, should there be one.
    for (uintptr_t a = address; a < address + bytes;) {
      const uintptr_t page = a / kHostPageBytes;
      const size_t offset = a % kHostPageBytes, n = std::min<size_t>(kHostPageBytes - offset, address + bytes - a);
      GlobalPage& p = global_page(page);
      if (!p.in_block) {
        p.in_block = true;
        s.block_pages.push_back(&p);
      }
      set_bits(store ? p.block_write : p.block_read, offset, n);
      a += n;
    }
    s.log.push_back(GlobalAccess{address, pc_offset(pc), c.block, uint16_t(c.thread), uint16_t(bytes), store});
  }
}

void race_block_end() {
  RaceState& s = t_state;
  for (const GlobalPage* p : s.block_pages)
    for (size_t w = 0; w < p->block_read.size(); ++w)
      if ((p->block_write[w] & (p->launch_write[w] | p->launch_read[w])) | (p->block_read[w] & p->launch_write[w]))
        throw KernelFault(replay_global());
  for (GlobalPage* p : s.block_pages) {
    for (size_t w = 0; w < p->block_read.size(); ++w) {
      p->launch_read[w] |= p->block_read[w];
      p->launch_write[w] |= p->block_write[w];
    }
    p->block_read = PageBits{};
    p->block_write = PageBits{};
    p->in_block = false;
  }
  s.block_pages.clear();
}

}  // namespace astrai::emu
