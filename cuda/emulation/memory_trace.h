// Every memory access an emulated kernel makes, for tools that watch them:
// the race detector (race_detector.h) and, later, a performance report
// (coalescing, shared-memory bank conflicts) that needs the same stream.
//
// How accesses are seen without touching the kernels: the emulated build
// compiles the kernel files (.cu) with clang++ and
// -fsanitize-coverage=func,trace-loads,trace-stores (cuda/meson.build), which
// makes every load and store of kernel code call
// __sanitizer_cov_load<N>(address) / __sanitizer_cov_store<N>(address)
// (memory_access_hooks.cpp). The return address of that call is the
// instruction's place in the kernel (describe_code_address names its source
// line). An access is then classified:
//   - on the running CUDA thread's own fiber stack (its locals: registers on
//     a GPU): dropped;
//   - inside the block's dynamic shared memory, or inside this OS thread's
//     static TLS block, where `__shared__` variables live (`static
//     thread_local` here): MemorySpace::Shared;
//   - inside a device allocation (cudaMalloc): MemorySpace::Global;
//   - anything else (host memory a test hands a kernel directly): dropped.
// Atomics (atomics.cpp) and completed cp.async copies (block_runner.cpp) are
// reported by the emulator itself; atomics carry `atomic`.
//
// What is not seen: accesses outside kernel files (the emulator, cuBLASLt's
// stand-in, host code), and block copies the compiler turns into memcpy or
// memset calls (clang instruments loads and stores, not those intrinsics).
//
// Cost: with no observer and the race detector off, each access is one call
// that tests a thread_local flag and returns. The observer runs on the OS
// thread that runs the launch, under the emulator's lock; it must not launch
// kernels.
#pragma once

#include <cstdint>
#include <string>

#include "cuda/emulation/kernel_runtime.h"

namespace astrai::emu {

enum class MemorySpace : uint8_t { Global, Shared };

struct MemoryAccess {
  const void* address;
  uint32_t bytes;
  bool store;
  bool atomic;
  MemorySpace space;
  uint32_t block;   // linear index of the block in the grid: x + grid.x * (y + grid.y * z)
  uint32_t thread;  // linear index of the thread in the block, the same way
  const void* pc;   // the instruction in the kernel code (describe_code_address)
};

class MemoryObserver {
 public:
  virtual ~MemoryObserver() = default;
  virtual void launch_begin(const KernelLaunch& launch) = 0;  // name, grid, block, dynamic shared bytes
  virtual void access(const MemoryAccess& access) = 0;
  virtual void launch_end(const KernelLaunch& launch) = 0;    // also after a fault
};

// One observer at a time; nullptr removes it. Not owned.
void set_memory_observer(MemoryObserver* observer);

// "file:line" of a code address, with the lines it is inlined into:
// "dtype_device.cuh:30 (inlined in residual_rmsnorm.cu:48)". Uses addr2line
// on the kernel files' line tables (-gline-tables-only); "0x... (no line
// information)" when that fails.
std::string describe_code_address(const void* pc);

// The demangled name of the function at `function` (a kernel's entry, as
// KernelLaunch::function holds it) from the same line tables:
// "void astrai::cuda::(anonymous namespace)::convert_kernel<float, true>(float const*, unsigned long, float*)";
// "" when unknown.
std::string code_function_name(const void* function);

}  // namespace astrai::emu
