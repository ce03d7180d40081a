// One block at a time; its threads are fibers. See block_runner.h.
//
// The scheduler of a block runs every ready fiber until it blocks (at a
// barrier or shuffle) or returns; then it releases the barriers that every
// thread they concern has reached, and repeats. A barrier that can never be
// released is a fault, reported with where each thread waits.
//
// A switch between fibers is Boost.Context's fcontext jump: it saves the
// callee-saved registers and the stack pointer, nothing else. ucontext's
// swapcontext, used before, also saved and restored the signal mask with a
// system call on every switch: 6.1 million rt_sigprocmask calls for 20 tokens
// of stories260K (strace -c). The fcontext functions live in
// boost::context::detail, but they are the layer every Boost.Context API is
// built on, and the one that lets an abandoned fiber (left at a barrier when
// its block faults) simply be dropped: the public boost::context::fiber
// unwinds a fiber's stack when it is destroyed, which would resume a faulted
// kernel's threads.
#include "cuda/emulation/block_runner.h"

#include "cuda/emulation/access_context.h"
#include "cuda/emulation/device_constants.h"

#include <boost/context/detail/fcontext.hpp>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <sstream>
#include <vector>

namespace astrai::emu {
namespace {

namespace fcontext = boost::context::detail;

constexpr size_t kFiberStackBytes = 256 * 1024;  // generous: kernels keep small arrays in registers on a GPU

enum class Waiting { Nothing, Block, Warp, Done, Faulted };

struct Site {
  const char* file = "";
  int line = 0;
  bool operator==(const Site& o) const { return line == o.line && std::strcmp(file, o.file) == 0; }
};

std::string where(const Site& s) { return std::string(s.file) + ":" + std::to_string(s.line); }

// A cp.async copy issued by a thread and not yet waited for.
struct PendingCopy {
  void* destination;
  const void* source;
  size_t bytes;
  const void* pc;    // where the kernel issued it, for the memory trace
  int group;         // -1 until cp_async_commit() closes the thread's open group
};

struct Fiber {
  fcontext::fcontext_t context = nullptr;  // where it resumes (set while it is suspended)
  char* stack = nullptr;
  uint3 index{};
  int linear = 0;
  Waiting waiting = Waiting::Nothing;
  Site site;
  // The warp collective it waits at (Waiting::Warp).
  WarpOp op = WarpOp::Sync;
  unsigned mask = 0;
  uint64_t warp_value = 0;  // a shuffle's value (4 or 8 bytes), or a vote's predicate
  int warp_operand = 0;     // delta, lane mask or source lane
  int shuffle_width = kWarpSize;
  uint64_t warp_result = 0;
  unsigned warp_live = 0;   // the warp's live lanes when the collective was released
  // cp.async: copies in issue order, and the number of groups committed so far.
  std::vector<PendingCopy> pending_copies;
  int committed_groups = 0;
};

// Fiber stacks, mapped once per thread and reused by every block: each with a
// guard page below it, so an overflow faults instead of corrupting a neighbour.
class StackPool {
 public:
  ~StackPool() {
    for (void* s : stacks_) munmap(s, kFiberStackBytes + page());
  }
  char* stack(size_t i) {
    while (stacks_.size() <= i) {
      void* p = mmap(nullptr, kFiberStackBytes + page(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      mprotect(p, page(), PROT_NONE);
      stacks_.push_back(p);
    }
    return static_cast<char*>(stacks_[i]) + page();
  }

 private:
  static size_t page() { return size_t(sysconf(_SC_PAGESIZE)); }
  std::vector<void*> stacks_;
};

std::atomic<uint64_t> g_order_seed{[] {
  const char* s = std::getenv("ASTRAI_EMULATION_THREAD_ORDER_SEED");
  return s ? std::strtoull(s, nullptr, 10) : 0ull;
}()};

// The block this OS thread is running, and the fiber inside it.
struct Block;
thread_local Block* t_block = nullptr;

struct Block {
  const KernelLaunch* launch = nullptr;
  uint3 index{};
  std::vector<Fiber> fibers;
  int current = -1;
  fcontext::fcontext_t scheduler = nullptr;  // where the running fiber returns to
  std::vector<unsigned char> shared;  // dynamic shared memory
  uint32_t linear_index = 0;          // of the block in the grid
  uint64_t interval = 0;              // the barrier interval running now (access_context.h)
  std::vector<uint32_t> warp_intervals;
  std::string fault;                  // set by fault_from_fiber

  Fiber& me() { return fibers[size_t(current)]; }

  // Back to the scheduler; returns when this fiber is resumed (by resume()).
  void yield() { scheduler = fcontext::jump_fcontext(scheduler, nullptr).fctx; }

  // Runs fiber i until it yields or ends.
  void resume(int i) {
    Fiber& f = fibers[size_t(i)];
    f.context = fcontext::jump_fcontext(f.context, nullptr).fctx;
  }

  std::string name() const {
    std::ostringstream out;
    out << "kernel " << launch->name << ", block (" << index.x << "," << index.y << "," << index.z << ")";
    return out.str();
  }
};

// A fiber's first frame: `from` is the scheduler that started it. It must
// never return (there is no frame to return to): the last jump leaves it.
void fiber_entry(fcontext::transfer_t from) {
  Block& b = *t_block;
  b.scheduler = from.fctx;
  b.launch->body();
  b.me().waiting = Waiting::Done;
  fcontext::jump_fcontext(b.scheduler, nullptr);
  std::abort();  // a finished fiber is never resumed
}

uint3 unflatten(int i, dim3 d) {
  return uint3{unsigned(i) % d.x, (unsigned(i) / d.x) % d.y, unsigned(i) / (d.x * d.y)};
}

std::string describe_waits(const Block& b) {
  std::map<std::string, std::vector<int>> by_place;
  for (const Fiber& f : b.fibers) {
    std::string place = f.waiting == Waiting::Done    ? "exited"
                        : f.waiting == Waiting::Block ? "__syncthreads() at " + where(f.site)
                        : f.waiting == Waiting::Warp  ? "a warp shuffle at " + where(f.site)
                        : f.waiting == Waiting::Faulted ? "faulted"
                                                      : "running";
    by_place[place].push_back(f.linear);
  }
  std::ostringstream out;
  for (const auto& [place, threads] : by_place) {
    out << "\n  " << threads.size() << " thread(s) " << place << " (threads " << threads.front();
    if (threads.size() > 1) out << " .. " << threads.back();
    out << ")";
  }
  return out.str();
}

// The source lane of a shuffle by `lane`, or -1 when the lane keeps its own
// value. PTX's shfl.sync rule: lanes form segments of `width`; up reads
// lane - delta and keeps its own value below its segment; down reads
// lane + delta, xor lane ^ mask, both keeping their own value past the end of
// the segment (xor may read an earlier segment); idx reads lane src of the
// segment, src taken modulo width.
int shuffle_source(WarpOp op, int lane, int operand, int width) {
  const int segment = lane - lane % width, segment_end = segment + width - 1;
  int source = lane;
  switch (op) {
    case WarpOp::Up: source = lane - operand; return source >= segment ? source : -1;
    case WarpOp::Down: source = lane + operand; return source <= segment_end ? source : -1;
    case WarpOp::Xor: source = lane ^ operand; return source <= segment_end ? source : -1;
    case WarpOp::Index: return segment + (operand & (width - 1));
    default: return -1;
  }
}

// The results of a warp collective every live lane of warp [first, last)
// reached, `live` the mask of those lanes.
void exchange(Block& b, int first, int last, unsigned live) {
  for (int i = first; i < last; ++i) b.fibers[size_t(i)].warp_live = live;
  const WarpOp op = b.fibers[size_t(first + __builtin_ctz(live))].op;
  if (op == WarpOp::Sync) return;
  if (op == WarpOp::Ballot) {
    uint64_t votes = 0;
    for (int i = first; i < last; ++i) {
      const Fiber& f = b.fibers[size_t(i)];
      if (f.waiting != Waiting::Done && f.warp_value != 0) votes |= 1u << (i - first);
    }
    for (int i = first; i < last; ++i) {
      Fiber& f = b.fibers[size_t(i)];
      f.warp_result = votes & f.mask;  // a lane outside the mask does not vote
    }
    return;
  }
  for (int i = first; i < last; ++i) {
    Fiber& f = b.fibers[size_t(i)];
    if (f.waiting == Waiting::Done) continue;
    const int source = shuffle_source(op, i - first, f.warp_operand, f.shuffle_width);
    // A source past a partial warp's last thread does not exist: the lane keeps its own value.
    const bool inside = source >= 0 && first + source < last;
    f.warp_result = inside ? b.fibers[size_t(first + source)].warp_value : f.warp_value;
  }
}

// A number for a new barrier interval, unique on this OS thread.
uint64_t next_interval() {
  thread_local uint64_t last = 0;
  return ++last;
}

// Releases the warps whose live lanes all wait at the same shuffle; returns
// whether any was released. Faults on a mask that leaves out a live lane.
bool release_warps(Block& b) {
  bool released = false;
  const int n = int(b.fibers.size());
  for (int first = 0; first < n; first += kWarpSize) {
    const int last = std::min(n, first + kWarpSize);
    bool all_at_shuffle = true, any_at_shuffle = false;
    unsigned live = 0;
    for (int i = first; i < last; ++i) {
      const Fiber& f = b.fibers[size_t(i)];
      if (f.waiting == Waiting::Done) continue;
      live |= 1u << (i - first);
      if (f.waiting == Waiting::Warp) any_at_shuffle = true; else all_at_shuffle = false;
    }
    if (!any_at_shuffle || !all_at_shuffle) continue;
    const Fiber& lead = b.fibers[size_t(first + __builtin_ctz(live))];
    for (int i = first; i < last; ++i) {
      const Fiber& f = b.fibers[size_t(i)];
      if (f.waiting == Waiting::Done) continue;
      if (!(f.site == lead.site))
        throw KernelFault(b.name() + ": the lanes of warp " + std::to_string(first / kWarpSize) +
                          " wait at different shuffles, " + where(lead.site) + " and " + where(f.site));
      if ((f.mask & live) != live)
        throw KernelFault(b.name() + ": the shuffle at " + where(f.site) + " has mask 0x" +
                          [&] { std::ostringstream o; o << std::hex << f.mask; return o.str(); }() +
                          " but live lanes 0x" + [&] { std::ostringstream o; o << std::hex << live; return o.str(); }() +
                          " of warp " + std::to_string(first / kWarpSize) + " all reached it");
    }
    exchange(b, first, last, live);
    ++b.warp_intervals[size_t(first / kWarpSize)];  // the collective orders the lanes' accesses
    for (int i = first; i < last; ++i)
      if (b.fibers[size_t(i)].waiting == Waiting::Warp) b.fibers[size_t(i)].waiting = Waiting::Nothing;
    released = true;
  }
  return released;
}

// Releases __syncthreads() when every thread waits at the same one.
bool release_block(Block& b) {
  const Fiber* lead = nullptr;
  bool any_done = false;
  for (const Fiber& f : b.fibers) {
    if (f.waiting == Waiting::Done) {
      any_done = true;
      continue;
    }
    if (f.waiting != Waiting::Block) return false;
    if (lead == nullptr) lead = &f;
    if (!(f.site == lead->site))
      throw KernelFault(b.name() + ": threads wait at different barriers, " + where(lead->site) + " (thread " +
                        std::to_string(lead->linear) + ") and " + where(f.site) + " (thread " +
                        std::to_string(f.linear) + ")" + describe_waits(b));
  }
  if (lead == nullptr) return false;
  if (any_done)
    throw KernelFault(b.name() + ": some threads exited while the others wait at __syncthreads() at " +
                      where(lead->site) + " (on a GPU, a hang or undefined behaviour)" + describe_waits(b));
  for (Fiber& f : b.fibers) f.waiting = Waiting::Nothing;
  b.interval = next_interval();
  return true;
}


void run_block(const KernelLaunch& launch, uint3 block_index, StackPool& stacks, std::mt19937_64* order) {
  Block b;
  b.launch = &launch;
  b.index = block_index;
  b.linear_index = block_index.x + launch.grid.x * (block_index.y + launch.grid.y * block_index.z);
  const int n = int(launch.block.x * launch.block.y * launch.block.z);
  b.fibers.resize(size_t(n));
  b.shared.assign(launch.dynamic_smem, 0xff);  // NaN in float32 and bfloat16 alike
  b.interval = next_interval();
  b.warp_intervals.assign(size_t((n + kWarpSize - 1) / kWarpSize), 0);
  for (int i = 0; i < n; ++i) {
    Fiber& f = b.fibers[size_t(i)];
    f.linear = i;
    f.index = unflatten(i, launch.block);
    f.stack = stacks.stack(size_t(i));
    f.context = fcontext::make_fcontext(f.stack + kFiberStackBytes, kFiberStackBytes, fiber_entry);  // stacks grow down
  }
  AccessContext& access = t_access;
  access.dynamic_begin = reinterpret_cast<uintptr_t>(b.shared.data());
  access.dynamic_end = access.dynamic_begin + b.shared.size();
  access.block = b.linear_index;
  access.block_serial = next_interval();
  memory_block_begin();
  const bool tracing = memory_tracing_wanted();
  Block* outer = t_block;
  t_block = &b;
  struct Restore {
    Block* outer;
    ~Restore() { t_block = outer; }
  } restore{outer};

  std::vector<int> sequence(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) sequence[size_t(i)] = i;
  for (;;) {
    if (order) std::shuffle(sequence.begin(), sequence.end(), *order);
    for (int i : sequence) {
      if (b.fibers[size_t(i)].waiting != Waiting::Nothing) continue;
      b.current = i;
      Fiber& f = b.fibers[size_t(i)];
      access.stack_begin = reinterpret_cast<uintptr_t>(f.stack);
      access.stack_end = access.stack_begin + kFiberStackBytes;
      access.thread = uint32_t(i);
      access.interval = b.interval;
      access.warp_interval = b.warp_intervals[size_t(i / kWarpSize)];
      access.active = tracing;
      b.resume(i);
      access.active = false;
      if (!b.fault.empty()) throw KernelFault(b.fault);
    }
    b.current = -1;
    if (std::all_of(b.fibers.begin(), b.fibers.end(), [](const Fiber& f) { return f.waiting == Waiting::Done; })) {
      memory_block_end();
      return;
    }
    const bool warps = release_warps(b);
    const bool block = release_block(b);
    if (!warps && !block)
      throw KernelFault(b.name() + ": no thread can go on (a barrier or shuffle that not every thread it "
                        "concerns reaches)" + describe_waits(b));
  }
}

Block& running_block(const char* what) {
  if (t_block == nullptr || t_block->current < 0)
    throw std::logic_error(std::string(what) + " used outside an emulated kernel");
  return *t_block;
}

const char* op_name(WarpOp op) {
  switch (op) {
    case WarpOp::Down: return "__shfl_down_sync";
    case WarpOp::Up: return "__shfl_up_sync";
    case WarpOp::Xor: return "__shfl_xor_sync";
    case WarpOp::Index: return "__shfl_sync";
    case WarpOp::Ballot: return "a warp vote";
    case WarpOp::Sync: return "__syncwarp";
  }
  return "?";
}

// Waits until every live lane of the warp reaches this collective; returns
// the lane's result.
uint64_t warp_collective(const char* file, int line, WarpOp op, unsigned mask, uint64_t value, int operand,
                         int width) {
  Block& b = running_block(op_name(op));
  if (width <= 0 || width > kWarpSize || (width & (width - 1)) != 0)
    fault_from_fiber(b.name() + ": " + op_name(op) + " width " + std::to_string(width) + " at " + file + ":" +
                      std::to_string(line));
  Fiber& f = b.me();
  f.op = op;
  f.warp_value = value;
  f.warp_operand = operand;
  f.shuffle_width = width;
  f.mask = mask;
  f.site = Site{file, line};
  f.waiting = Waiting::Warp;
  b.yield();
  return b.me().warp_result;
}

template <typename T>
T shuffle(const char* file, int line, WarpOp op, unsigned mask, T value, int operand, int width) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8);
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  const uint64_t out = warp_collective(file, line, op, mask, bits, operand, width);
  T result;
  std::memcpy(&result, &out, sizeof(T));
  return result;
}

}  // namespace

void run_kernel(const KernelLaunch& launch) {
  thread_local StackPool stacks;
  memory_launch_begin(launch);
  struct End {
    const KernelLaunch& launch;
    ~End() { memory_launch_end(launch); }
  } end{launch};
  const uint64_t seed = g_order_seed.load();
  std::mt19937_64 order(seed);
  // Blocks in index order (x fastest), or, with a seed, in a permutation of
  // it: the blocks of a launch may run in any order on a GPU.
  std::vector<uint3> blocks;
  blocks.reserve(size_t(launch.grid.x) * launch.grid.y * launch.grid.z);
  for (unsigned z = 0; z < launch.grid.z; ++z)
    for (unsigned y = 0; y < launch.grid.y; ++y)
      for (unsigned x = 0; x < launch.grid.x; ++x) blocks.push_back(uint3{x, y, z});
  if (seed) std::shuffle(blocks.begin(), blocks.end(), order);
  for (const uint3& index : blocks) run_block(launch, index, stacks, seed ? &order : nullptr);
}

std::string running_thread_description() {
  const Block* b = t_block;
  if (b == nullptr || b->current < 0) return "host code";
  const uint3 t = unflatten(b->current, b->launch->block);
  return b->name() + ", thread (" + std::to_string(t.x) + "," + std::to_string(t.y) + "," + std::to_string(t.z) + ")";
}

void set_thread_order_seed(uint64_t seed) { g_order_seed = seed; }
uint64_t thread_order_seed() { return g_order_seed.load(); }

uint3 thread_index() { return running_block("threadIdx").me().index; }
uint3 block_index() { return running_block("blockIdx").index; }
dim3 block_dimensions() { return running_block("blockDim").launch->block; }
dim3 grid_dimensions() { return running_block("gridDim").launch->grid; }

void* dynamic_shared_memory() {
  Block& b = running_block("extern __shared__");
  return b.shared.empty() ? nullptr : b.shared.data();
}

void block_barrier(const char* file, int line) {
  Block& b = running_block("__syncthreads()");
  b.me().site = Site{file, line};
  b.me().waiting = Waiting::Block;
  b.yield();
}

#define ASTRAI_EMU_SHUFFLE(T)                                                                       \
  T warp_shuffle(const char* file, int line, WarpOp op, unsigned mask, T value, int operand, int width) { \
    return shuffle(file, line, op, mask, value, operand, width);                                        \
  }
ASTRAI_EMU_SHUFFLE(float)
ASTRAI_EMU_SHUFFLE(int)
ASTRAI_EMU_SHUFFLE(unsigned)
ASTRAI_EMU_SHUFFLE(double)
ASTRAI_EMU_SHUFFLE(long long)
ASTRAI_EMU_SHUFFLE(unsigned long long)
#undef ASTRAI_EMU_SHUFFLE

unsigned warp_ballot(const char* file, int line, unsigned mask, int predicate) {
  return unsigned(warp_collective(file, line, WarpOp::Ballot, mask, predicate != 0, 0, kWarpSize));
}

int warp_any(const char* file, int line, unsigned mask, int predicate) {
  return warp_ballot(file, line, mask, predicate) != 0u;
}

int warp_all(const char* file, int line, unsigned mask, int predicate) {
  // Every live lane is in the mask (else the collective faults).
  const unsigned votes = warp_ballot(file, line, mask, predicate);
  return votes == running_block("__all_sync").me().warp_live;
}

void warp_sync(const char* file, int line, unsigned mask) {
  warp_collective(file, line, WarpOp::Sync, mask, 0, 0, kWarpSize);
}

unsigned active_mask() {
  Block& b = running_block("__activemask()");
  const int first = b.current - b.current % kWarpSize, last = std::min(int(b.fibers.size()), first + kWarpSize);
  unsigned live = 0;
  for (int i = first; i < last; ++i)
    if (b.fibers[size_t(i)].waiting != Waiting::Done) live |= 1u << (i - first);
  return live;
}

namespace {
// A completed copy, as the thread's own read and write for the memory trace.
void copy_completed(void* destination, const void* source, size_t bytes, const void* pc) {
  memory_async_copy_completed(destination, bytes);
  memory_access_by_emulator(source, bytes, false, pc);
  memory_access_by_emulator(destination, bytes, true, pc);
}
}  // namespace

void fault_from_fiber(std::string message) {
  Block& b = running_block("a fault");
  b.fault = std::move(message);
  b.me().waiting = Waiting::Faulted;
  b.yield();
  std::abort();  // never resumed: the scheduler throws the fault
}

// cp.async: the copy happens when a wait covers its group (a GPU may do it
// any time before; reading the destination earlier is the kernel's bug, and
// here it reads the old bytes, NaN in fresh dynamic shared memory).
void async_copy(void* shared_destination, const void* global_source, size_t bytes) {
  Block& b = running_block("cp.async");
  const void* pc = __builtin_return_address(0);
  memory_async_copy_issued(shared_destination, bytes, pc);
  b.me().pending_copies.push_back(PendingCopy{shared_destination, global_source, bytes, pc, -1});
}

void async_commit() {
  Fiber& f = running_block("cp.async.commit_group").me();
  for (PendingCopy& c : f.pending_copies)
    if (c.group < 0) c.group = f.committed_groups;
  ++f.committed_groups;
}

void async_wait(int pending_groups_allowed) {
  Fiber& f = running_block("cp.async.wait_group").me();
  const int complete_below = f.committed_groups - pending_groups_allowed;  // groups [0, this) must be done
  auto keep = f.pending_copies.begin();
  for (PendingCopy& c : f.pending_copies) {
    if (c.group >= 0 && c.group < complete_below) {
      std::memcpy(c.destination, c.source, c.bytes);
      copy_completed(c.destination, c.source, c.bytes, c.pc);
    } else {
      *keep++ = c;
    }
  }
  f.pending_copies.erase(keep, f.pending_copies.end());
}

void misaligned_vector_access(const void* p, size_t alignment, const char* file, int line) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(p);
  Block& b = running_block("a vector access");
  std::ostringstream out;
  out << b.name() << ", thread " << b.me().index.x << ": a " << alignment << "-byte vector access at " << p << ", "
      << address % alignment << " bytes past a " << alignment << "-byte boundary (misaligned address on a GPU), at "
      << file << ":" << line;
  fault_from_fiber(out.str());
}

}  // namespace astrai::emu
