// The CUDA runtime functions AstrAI calls, implemented on the CPU for the
// emulated build (-Dcuda=emulated), which links this file instead of libcudart.
// Host code keeps including the real <cuda_runtime_api.h>; these definitions
// take its declarations (C linkage), so no line of the backend changes.
//
// Eight emulated devices, "sm_90", whose memory is host memory (of this
// process: a tensor-parallel rank is a process of its own, so ranks never
// share memory; emulation/nccl_emulated.cpp joins them):
//  - The current device is per host thread (0 until cudaSetDevice), as in
//    CUDA. A stream belongs to the device current when it was made; a launch
//    or copy into a stream of another device than the calling thread's
//    current one fails (cudaErrorInvalidResourceHandle), which is what a GPU
//    does for launches: code that forgets cudaSetDevice on a new thread fails.
//  - Freed device memory is handed out again, most recently freed first, to
//    the next allocation it fits that asks for at least half what the block
//    last held, as CUDA's and the frameworks' caching allocators do; a handle
//    or cache keyed by a stale address meets another buffer there, as it
//    would on a GPU.
//  - Every device allocation ends against an inaccessible page (16-byte
//    alignment, so at most 15 bytes of slack; a reused block's slack is up to
//    a page), and freed memory waiting for reuse is inaccessible: a kernel
//    that reads or writes past the end of a buffer, or into freed memory,
//    stops with "emulated CUDA: out-of-bounds device access" naming the
//    allocation, the kernel, block and thread (then abort(), as a GPU's
//    illegal address ends the context). Accesses before a buffer's start are
//    not caught.
//  - cudaMalloc fills fresh memory with NaN bytes (0xff), so a kernel that
//    reads what nobody wrote produces NaN, as the tests require to catch it;
//    copies are checked against the allocations they touch.
//  - Streams are deferred: launches, async copies and sets queue up and run at
//    the next synchronising call (cudaStreamSynchronize, cudaDeviceSynchronize,
//    cudaEventSynchronize, a synchronous cudaMemcpy/cudaMemset, which act on
//    the legacy default stream and so wait for every stream). Host code that
//    reads a result before synchronising sees stale data, as on a GPU.
//  - Graph capture records the captured stream's work; calls a GPU refuses
//    during capture (allocation, synchronisation, synchronous copies) fail
//    with cudaErrorStreamCaptureUnsupported and invalidate the capture; a
//    graph launch queues the recorded work again.
//  - Launch errors (block too large, dynamic shared memory over the limit or
//    over the kernel's opt-in) are reported by cudaGetLastError() at once, as
//    a GPU does; a fault while a kernel runs (block_runner.h) is printed and
//    makes the synchronising call, and every later call, fail with
//    cudaErrorLaunchFailure (a GPU's sticky error).
// Everything runs under one lock, in the order the host asked for it.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cuda/emulation/access_context.h"
#include "cuda/emulation/block_runner.h"
#include "cuda/emulation/emulated_device.h"
#include "cuda/emulation/host_work.h"

// The runtime's opaque handles, defined here (the headers only declare them).
struct CUstream_st {
  int device = 0;  // the device current when the stream was made
  bool capturing = false;
  bool capture_invalid = false;
  cudaGraph_t graph = nullptr;
};
struct CUevent_st {
  cudaStream_t stream = nullptr;
  bool recorded = false;
  std::chrono::steady_clock::time_point when;
};
struct CUgraph_st {
  std::vector<std::function<void()>> ops;
  int launches = 0;
};
struct CUgraphExec_st {
  std::vector<std::function<void()>> ops;
  int launches = 0;
};

namespace astrai::emu {
namespace {

constexpr size_t kDeviceMemory = size_t(16) << 30;        // what cudaMemGetInfo reports as the total
constexpr size_t kSharedPerBlock = 48 * 1024;              // without the opt-in
constexpr size_t kSharedPerBlockOptin = 227 * 1024;        // sm_90
constexpr int kMaxThreadsPerBlock = 1024;
constexpr int kDevices = 8;  // one per rank of an 8-way tensor-parallel node (docs/tensor-parallel.md)
constexpr size_t kReuseCacheBytes = size_t(512) << 20;   // freed device memory kept for reuse, at most

struct Queued {
  cudaStream_t stream;
  std::function<void()> op;
};

// One device allocation's mapping: [base, start) unused, [start, start +
// capacity) the buffer (a reuse may take less), then one inaccessible page.
struct DeviceBlock {
  unsigned char* base = nullptr;
  size_t mapped = 0;
  unsigned char* start = nullptr;
  size_t capacity = 0;
  size_t size = 0;  // what the last allocation asked for
};
constexpr size_t kDeviceAlignment = 16;

struct State {
  std::recursive_mutex mutex;
  std::map<const unsigned char*, size_t> device;  // allocation start -> bytes
  std::map<const unsigned char*, size_t> pinned;
  std::map<const unsigned char*, DeviceBlock> blocks;  // start -> mapping, live and freed
  std::deque<unsigned char*> freed;  // starts of device blocks kept for reuse, most recent first
  size_t freed_bytes = 0;
  size_t device_bytes = 0;
  std::deque<Queued> queue;                       // every stream's pending work, in submission order
  std::map<const void*, int> smem_optin;          // kernel -> cudaFuncAttributeMaxDynamicSharedMemorySize
  cudaError_t sticky = cudaSuccess;
  std::string last_fault;  // the message of the last kernel fault
  EmulationCounters counters;

  // ASTRAI_EMULATED_MEMORY_REPORT=1: the peak of live device memory (host
  // memory here) on stderr at exit, so a test can tell the host's own memory
  // from the device's in a process's peak resident set
  // (tests/cli/test_load_memory.py).
  ~State() {
    const char* report = std::getenv("ASTRAI_EMULATED_MEMORY_REPORT");
    if (report && std::string(report) == "1")
      std::fprintf(stderr, "emulated device: peak %llu bytes of device memory\n",
                   static_cast<unsigned long long>(counters.peak_device_bytes));
  }
};

State& state() {
  static State s;
  return s;
}

thread_local cudaError_t t_cuda_last_error = cudaSuccess;
thread_local int t_current_device = 0;

// Whether work may go into `stream` from this thread: its device must be current.
bool stream_on_current_device(cudaStream_t stream) { return stream == nullptr || stream->device == t_current_device; }

cudaError_t fail(cudaError_t e) {
  t_cuda_last_error = e;
  return e;
}

// Runs the queued work of `stream` (every stream when `all`), in order.
void ensure_segv_handler();

cudaError_t flush(State& s, cudaStream_t stream, bool all) {
  if (s.sticky != cudaSuccess) return s.sticky;
  ensure_segv_handler();
  while (true) {
    auto it = std::find_if(s.queue.begin(), s.queue.end(),
                           [&](const Queued& q) { return all || q.stream == stream; });
    if (it == s.queue.end()) return cudaSuccess;
    std::function<void()> op = std::move(it->op);
    s.queue.erase(it);
    try {
      op();
    } catch (const KernelFault& fault) {
      std::fprintf(stderr, "emulated CUDA: kernel fault: %s\n", fault.what());
      s.last_fault = fault.what();
      s.sticky = cudaErrorLaunchFailure;
      s.queue.clear();
      return fail(s.sticky);
    }
  }
}

// The allocation holding [p, p + bytes), if any.
bool inside(const std::map<const unsigned char*, size_t>& allocations, const void* p, size_t bytes) {
  const auto* c = static_cast<const unsigned char*>(p);
  auto it = allocations.upper_bound(c);
  if (it == allocations.begin()) return false;
  --it;
  return c >= it->first && c + bytes <= it->first + it->second;
}

bool is_device(State& s, const void* p, size_t bytes) { return inside(s.device, p, bytes); }

// Host memory standing for device or pinned memory, filled with NaN bytes:
// fresh memory is never zero to count on.
unsigned char* allocate_poisoned(size_t size) {
  auto* p = static_cast<unsigned char*>(std::malloc(std::max<size_t>(size, 1)));
  if (p != nullptr) std::memset(p, 0xff, size);
  return p;
}

// Frees `ptr` if `allocations` holds it (after the device finishes, as the
// real frees synchronise); returns its size through `bytes`.
cudaError_t release(State& s, std::map<const unsigned char*, size_t>& allocations, void* ptr, size_t* bytes) {
  flush(s, nullptr, true);
  auto it = allocations.find(static_cast<unsigned char*>(ptr));
  if (it == allocations.end()) return fail(cudaErrorInvalidValue);
  *bytes = it->second;
  allocations.erase(it);
  std::free(ptr);
  return cudaSuccess;
}

size_t page_bytes() { return size_t(sysconf(_SC_PAGESIZE)); }
size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// Makes [start, start + size) of `b` accessible and NaN-filled, and the pages
// after it up to the guard inaccessible.
void fit_block(DeviceBlock& b, size_t size) {
  b.size = size;
  unsigned char* guard = b.start + b.capacity;
  mprotect(b.base, size_t(guard - b.base), PROT_READ | PROT_WRITE);
  auto* end_page = reinterpret_cast<unsigned char*>(
      round_up(reinterpret_cast<uintptr_t>(b.start + round_up(std::max<size_t>(size, 1), kDeviceAlignment)),
               page_bytes()));
  if (end_page < guard) mprotect(end_page, size_t(guard - end_page), PROT_NONE);
  std::memset(b.start, 0xff, size);
}

// A fresh mapping for `size` bytes whose end abuts an inaccessible page.
unsigned char* map_device_block(State& s, size_t size) {
  const size_t rounded = round_up(std::max<size_t>(size, 1), kDeviceAlignment);
  const size_t usable = round_up(rounded, page_bytes());
  void* p = mmap(nullptr, usable + page_bytes(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  DeviceBlock b;
  b.base = static_cast<unsigned char*>(p);
  b.mapped = usable + page_bytes();
  b.start = b.base + usable - rounded;
  b.capacity = rounded;
  b.size = size;
  mprotect(b.base + usable, page_bytes(), PROT_NONE);
  std::memset(b.start, 0xff, size);
  s.blocks[b.start] = b;
  return b.start;
}

// A block of the freed list that holds `size` bytes and last held at most
// twice as much, most recently freed first; poisoned again like fresh memory.
unsigned char* reuse_freed(State& s, size_t size) {
  for (auto it = s.freed.begin(); it != s.freed.end(); ++it) {
    DeviceBlock& b = s.blocks.at(*it);
    if (b.capacity >= size && b.size <= 2 * std::max<size_t>(size, 1)) {
      unsigned char* p = *it;
      s.freed_bytes -= b.capacity;
      s.freed.erase(it);
      fit_block(b, size);
      return p;
    }
  }
  return nullptr;
}

// Keeps a freed device block for reuse (inaccessible until then), unmapping
// the oldest ones beyond kReuseCacheBytes.
void keep_for_reuse(State& s, unsigned char* p) {
  const DeviceBlock& b = s.blocks.at(p);
  // Freed device memory is no host memory the program uses: its pages go
  // (a reuse poisons them again), so the resident set counts live buffers.
  madvise(b.base, b.mapped, MADV_DONTNEED);
  mprotect(b.base, b.mapped, PROT_NONE);
  s.freed.push_front(p);
  s.freed_bytes += b.capacity;
  while (s.freed_bytes > kReuseCacheBytes) {
    const auto oldest = s.blocks.find(s.freed.back());
    s.freed_bytes -= oldest->second.capacity;
    munmap(oldest->second.base, oldest->second.mapped);
    s.blocks.erase(oldest);
    s.freed.pop_back();
  }
}

// The SIGSEGV handler: a fault inside a device block's mapping is an
// out-of-bounds (or freed-memory) device access, reported and fatal; any
// other fault goes to the handler that was there before.
struct sigaction g_previous_segv;

void on_segv(int signal_number, siginfo_t* info, void* context) {
  State& s = state();  // not locked: the faulting thread may hold the lock
  const auto* a = static_cast<const unsigned char*>(info->si_addr);
  auto it = s.blocks.upper_bound(a);
  if (it != s.blocks.begin()) {
    const DeviceBlock& b = std::prev(it)->second;
    if (a >= b.base && a < b.base + b.mapped) {
      char message[768];
      const auto live = s.device.find(b.start);
      const std::string who = running_thread_description();
      if (live != s.device.end())
        std::snprintf(message, sizeof message,
                      "emulated CUDA: out-of-bounds device access: address %p is %td bytes past the end of the "
                      "%zu-byte allocation at %p (%s)\n",
                      static_cast<const void*>(a), a - (b.start + live->second), live->second,
                      static_cast<const void*>(b.start), who.c_str());
      else
        std::snprintf(message, sizeof message,
                      "emulated CUDA: out-of-bounds device access: address %p lies in freed device memory (the "
                      "block at %p) (%s)\n",
                      static_cast<const void*>(a), static_cast<const void*>(b.start), who.c_str());
      const ssize_t written = write(2, message, std::strlen(message));
      (void)written;
      std::abort();
    }
  }
  sigaction(SIGSEGV, &g_previous_segv, nullptr);  // returning re-runs the access under it
  (void)signal_number;
  (void)context;
}

// Installs on_segv unless it is installed (test frameworks install their own
// per test, so this runs before every kernel).
void ensure_segv_handler() {
  struct sigaction current {};
  sigaction(SIGSEGV, nullptr, &current);
  if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_segv) return;
  struct sigaction ours {};
  ours.sa_sigaction = on_segv;
  ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&ours.sa_mask);
  sigaction(SIGSEGV, &ours, &g_previous_segv);
}

// A copy's pointers must lie in memory of the kinds it names.
cudaError_t check_copy(State& s, void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (bytes == 0) return cudaSuccess;
  const bool dst_device = is_device(s, dst, bytes), src_device = is_device(s, src, bytes);
  switch (kind) {
    case cudaMemcpyHostToDevice: return dst_device && !src_device ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyDeviceToHost: return src_device && !dst_device ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyDeviceToDevice: return dst_device && src_device ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyHostToHost: return cudaSuccess;
    case cudaMemcpyDefault: return cudaSuccess;
  }
  return cudaErrorInvalidMemcpyDirection;
}

// Queues `op` on `stream`, or records it into the graph it is capturing.
void submit(State& s, cudaStream_t stream, std::function<void()> op, bool is_launch) {
  if (stream != nullptr && stream->capturing) {
    stream->graph->ops.push_back(std::move(op));
    if (is_launch) ++stream->graph->launches;
    return;
  }
  s.queue.push_back({stream, std::move(op)});
}

// Calls a GPU refuses while `stream` (or any stream) is capturing.
bool capture_forbids(cudaStream_t stream) {
  if (stream == nullptr) return false;
  if (stream->capturing) {
    stream->capture_invalid = true;
    return true;
  }
  return false;
}

std::vector<cudaStream_t>& live_streams() {
  static std::vector<cudaStream_t> streams;
  return streams;
}

bool any_capturing() {
  bool any = false;
  for (cudaStream_t s : live_streams())
    if (s->capturing) {
      s->capture_invalid = true;
      any = true;
    }
  return any;
}

}  // namespace

void enqueue_launch(cudaStream_t stream, KernelLaunch launch) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  const size_t threads = size_t(launch.block.x) * launch.block.y * launch.block.z;
  if (threads == 0 || threads > size_t(kMaxThreadsPerBlock) || launch.grid.x == 0 || launch.grid.y == 0 ||
      launch.grid.z == 0) {
    fail(cudaErrorInvalidConfiguration);
    return;
  }
  if (!stream_on_current_device(stream)) {
    fail(cudaErrorInvalidResourceHandle);
    return;
  }
  size_t smem_limit = kSharedPerBlock;
  if (auto it = s.smem_optin.find(launch.function); it != s.smem_optin.end())
    smem_limit = std::max(smem_limit, size_t(it->second));
  if (launch.dynamic_smem > smem_limit) {
    fail(cudaErrorInvalidValue);
    return;
  }
  ++s.counters.kernel_launches;
  auto shared = std::make_shared<KernelLaunch>(std::move(launch));
  submit(s, stream, [shared, &s] {
    ++s.counters.kernels_run;
    run_kernel(*shared);
  }, true);
}

void enqueue_host_work(cudaStream_t stream, std::function<void()> work) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  submit(s, stream, std::move(work), false);
}

bool is_device_address(const void* address) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return is_device(s, address, 1);
}

bool is_device_range(const void* address, size_t bytes) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return is_device(s, address, std::max<size_t>(bytes, 1));
}

int current_device() { return t_current_device; }
int stream_device(cudaStream_t stream) { return stream == nullptr ? t_current_device : stream->device; }

EmulationCounters counters() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return s.counters;
}

std::string last_kernel_fault() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return s.last_fault;
}

void reset_after_fault() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.sticky = cudaSuccess;
  s.queue.clear();
  t_cuda_last_error = cudaSuccess;
}

}  // namespace astrai::emu

using astrai::emu::fail;
using astrai::emu::state;

// ---- errors ----

cudaError_t cudaGetLastError() {
  const cudaError_t e = astrai::emu::t_cuda_last_error;
  astrai::emu::t_cuda_last_error = cudaSuccess;
  return e != cudaSuccess ? e : state().sticky;
}

cudaError_t cudaPeekAtLastError() {
  return astrai::emu::t_cuda_last_error != cudaSuccess ? astrai::emu::t_cuda_last_error : state().sticky;
}

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorIllegalState: return "cudaErrorIllegalState";
    default: return "cudaErrorUnknown";
  }
}

const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorLaunchFailure: return "unspecified launch failure (emulated: see the kernel fault printed above)";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorIllegalState: return "the operation cannot be performed in the present state";
    default: return "unknown error";
  }
}

// ---- device ----

cudaError_t cudaGetDeviceCount(int* count) {
  *count = astrai::emu::kDevices;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= astrai::emu::kDevices) return fail(cudaErrorInvalidDevice);
  astrai::emu::t_current_device = device;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  *device = astrai::emu::t_current_device;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device < 0 || device >= astrai::emu::kDevices) return fail(cudaErrorInvalidDevice);
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof prop->name, "%s", "AstrAI emulated device (CPU)");
  prop->major = 9;
  prop->minor = 0;
  prop->totalGlobalMem = astrai::emu::kDeviceMemory;
  prop->sharedMemPerBlock = astrai::emu::kSharedPerBlock;
  prop->sharedMemPerBlockOptin = astrai::emu::kSharedPerBlockOptin;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = astrai::emu::kMaxThreadsPerBlock;
  prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = 1024;
  prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = 0x7fffffff;
  prop->maxGridSize[1] = prop->maxGridSize[2] = 65535;
  prop->multiProcessorCount = 1;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (astrai::emu::any_capturing()) return fail(cudaErrorStreamCaptureUnsupported);
  return astrai::emu::flush(s, nullptr, true);
}

cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  *total = astrai::emu::kDeviceMemory;
  *free = astrai::emu::kDeviceMemory - std::min(s.device_bytes, astrai::emu::kDeviceMemory);
  return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaSuccess;  // others are hints
  if (value < 0 || size_t(value) > astrai::emu::kSharedPerBlockOptin) return fail(cudaErrorInvalidValue);
  s.smem_optin[func] = value;
  return cudaSuccess;
}

// ---- memory ----

cudaError_t cudaMalloc(void** ptr, size_t size) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (astrai::emu::any_capturing()) return fail(cudaErrorStreamCaptureUnsupported);
  if (s.device_bytes + size > astrai::emu::kDeviceMemory) return fail(cudaErrorMemoryAllocation);
  unsigned char* p = astrai::emu::reuse_freed(s, size);
  if (p == nullptr) p = astrai::emu::map_device_block(s, size);
  if (p == nullptr) return fail(cudaErrorMemoryAllocation);
  s.device[p] = size;
  s.device_bytes += size;
  s.counters.peak_device_bytes = std::max<uint64_t>(s.counters.peak_device_bytes, s.device_bytes);
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaFree(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  auto& s = state();
  std::lock_guard lock(s.mutex);
  astrai::emu::flush(s, nullptr, true);  // the real cudaFree synchronises
  auto it = s.device.find(static_cast<unsigned char*>(ptr));
  if (it == s.device.end()) return fail(cudaErrorInvalidValue);
  s.device_bytes -= it->second;
  astrai::emu::keep_for_reuse(s, static_cast<unsigned char*>(ptr));
  s.device.erase(it);
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void** ptr, size_t size) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  unsigned char* p = astrai::emu::allocate_poisoned(size);
  if (p == nullptr) return fail(cudaErrorMemoryAllocation);
  s.pinned[p] = size;
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaHostAlloc(void** ptr, size_t size, unsigned int) { return cudaMallocHost(ptr, size); }

cudaError_t cudaFreeHost(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  auto& s = state();
  std::lock_guard lock(s.mutex);
  size_t bytes = 0;
  return astrai::emu::release(s, s.pinned, ptr, &bytes);
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (astrai::emu::any_capturing()) return fail(cudaErrorStreamCaptureUnsupported);
  if (cudaError_t e = astrai::emu::check_copy(s, dst, src, count, kind); e != cudaSuccess) return fail(e);
  if (cudaError_t e = astrai::emu::flush(s, nullptr, true); e != cudaSuccess) return e;
  if (count) std::memmove(dst, src, count);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (!astrai::emu::stream_on_current_device(stream)) return fail(cudaErrorInvalidResourceHandle);
  if (cudaError_t e = astrai::emu::check_copy(s, dst, src, count, kind); e != cudaSuccess) return fail(e);
  if (count) astrai::emu::submit(s, stream, [dst, src, count] { std::memmove(dst, src, count); }, false);
  return cudaSuccess;
}

cudaError_t cudaMemset(void* dst, int value, size_t count) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (astrai::emu::any_capturing()) return fail(cudaErrorStreamCaptureUnsupported);
  if (count && !astrai::emu::is_device(s, dst, count)) return fail(cudaErrorInvalidValue);
  if (cudaError_t e = astrai::emu::flush(s, nullptr, true); e != cudaSuccess) return e;
  std::memset(dst, value, count);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* dst, int value, size_t count, cudaStream_t stream) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (!astrai::emu::stream_on_current_device(stream)) return fail(cudaErrorInvalidResourceHandle);
  if (count && !astrai::emu::is_device(s, dst, count)) return fail(cudaErrorInvalidValue);
  if (count) astrai::emu::submit(s, stream, [dst, value, count] { std::memset(dst, value, count); }, false);
  return cudaSuccess;
}

// ---- streams and events ----

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  *stream = new CUstream_st;
  (*stream)->device = astrai::emu::t_current_device;
  astrai::emu::live_streams().push_back(*stream);
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int) { return cudaStreamCreate(stream); }

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  auto& live = astrai::emu::live_streams();
  auto it = std::find(live.begin(), live.end(), stream);
  if (it == live.end()) return fail(cudaErrorInvalidResourceHandle);
  astrai::emu::flush(s, stream, false);  // pending work completes, as the real call lets it
  live.erase(it);
  delete stream;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (astrai::emu::capture_forbids(stream)) return fail(cudaErrorStreamCaptureUnsupported);
  return astrai::emu::flush(s, stream, stream == nullptr);
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  *event = new CUevent_st;
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int) { return cudaEventCreate(event); }

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  astrai::emu::flush(s, event->stream, event->stream == nullptr);
  delete event;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  event->stream = stream;
  event->recorded = false;
  astrai::emu::submit(s, stream, [event] {
    event->when = std::chrono::steady_clock::now();
    event->recorded = true;
  }, false);
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  return astrai::emu::flush(s, event->stream, event->stream == nullptr);
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!start->recorded || !end->recorded) return fail(cudaErrorInvalidResourceHandle);
  *ms = std::chrono::duration<float, std::milli>(end->when - start->when).count();
  return cudaSuccess;
}

// ---- graphs ----

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (stream == nullptr || stream->capturing) return fail(cudaErrorIllegalState);
  stream->capturing = true;
  stream->capture_invalid = false;
  stream->graph = new CUgraph_st;
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (stream == nullptr || !stream->capturing) return fail(cudaErrorIllegalState);
  stream->capturing = false;
  if (stream->capture_invalid) {
    delete stream->graph;
    stream->graph = nullptr;
    *graph = nullptr;
    return fail(cudaErrorStreamCaptureInvalidated);
  }
  *graph = stream->graph;
  stream->graph = nullptr;
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  *status = stream != nullptr && stream->capturing ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  if (graph == nullptr) return fail(cudaErrorInvalidValue);
  *exec = new CUgraphExec_st{graph->ops, graph->launches};
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (exec == nullptr) return fail(cudaErrorInvalidValue);
  if (!astrai::emu::stream_on_current_device(stream)) return fail(cudaErrorInvalidResourceHandle);
  ++s.counters.graph_launches;
  s.counters.kernel_launches += uint64_t(exec->launches);
  for (const auto& op : exec->ops) astrai::emu::submit(s, stream, op, false);
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}
