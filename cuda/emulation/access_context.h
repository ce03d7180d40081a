// What the memory-access hooks need to know about the CUDA thread running on
// this OS thread, kept up to date by block_runner.cpp at every fiber switch
// so that a hook reads it without a call. Private to cuda/emulation/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "cuda/emulation/memory_trace.h"

namespace astrai::emu {

struct AccessContext {
  bool active = false;  // a CUDA thread runs and someone listens (detector or observer)
  uintptr_t stack_begin = 0, stack_end = 0;      // the running fiber's stack
  uintptr_t dynamic_begin = 0, dynamic_end = 0;  // the block's dynamic shared memory
  uintptr_t static_begin = 0, static_end = 0;    // this OS thread's static TLS block (static __shared__)
  uint32_t block = 0;   // linear block index
  uint32_t thread = 0;  // linear thread index in the block
  // The running thread's barrier interval: a number unique to one block and
  // one stretch between two of its __syncthreads(). Two accesses by different
  // threads in the same interval are unordered.
  uint64_t interval = 0;
  // The running thread's warp's interval between warp collectives
  // (__syncwarp, shuffles, votes), which order the accesses of its lanes.
  uint32_t warp_interval = 0;
  uint64_t block_serial = 0;  // unique to the running block on this OS thread
};

// constinit: no TLS wrapper call on each use (the hooks read it on every access).
extern thread_local constinit AccessContext t_access;

// Whether the race detector or an observer listens: block_runner.cpp sets
// t_access.active from this when it switches to a fiber.
bool memory_tracing_wanted();

// Launch boundaries, from run_kernel (the launch's OS thread).
void memory_launch_begin(const KernelLaunch& launch);
void memory_launch_end(const KernelLaunch& launch);
// A new block starts on this OS thread (its dynamic shared memory in t_access).
void memory_block_begin();
// Every thread of the block has returned (may throw KernelFault: a race with
// another block of the launch).
void memory_block_end();

// Accesses the emulator makes for the kernel: a completed cp.async copy
// (plain accesses, as if the thread made them at `pc`) and atomics.
void memory_access_by_emulator(const void* address, size_t bytes, bool store, const void* pc);
// A cp.async copy issued into shared memory and not complete yet: any access
// to those bytes before its wait completes it is a fault (race detector).
void memory_async_copy_issued(const void* shared_destination, size_t bytes, const void* pc);
void memory_async_copy_completed(const void* shared_destination, size_t bytes);
void memory_atomic_access(const void* address, size_t bytes, const void* pc);

// Stops the running CUDA thread with a fault: its block's scheduler throws
// KernelFault(message) (block_runner.cpp). Never returns.
[[noreturn]] void fault_from_fiber(std::string message);

// Whether `address` lies in a live device allocation (cudart_emulated.cpp).
bool is_device_address(const void* address);

}  // namespace astrai::emu
