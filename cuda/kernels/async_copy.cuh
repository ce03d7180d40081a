// cp.async (sm_80+): a 16-byte copy from global to shared memory that does
// not pass through registers and overlaps with the thread's work until it
// waits for it. The spelling a kernel writes, for nvcc and the emulated build
// alike:
//
//   cp_async_16(&tile[i], &global[i]);  // issue (both 16-byte aligned)
//   cp_async_commit();                  // close the group of copies issued so far
//   cp_async_wait<1>();                 // all groups but the most recent one are done
//   __syncthreads();                    // ... and then visible to the other threads
//
// A wait only covers the calling thread's own copies; other threads see them
// after a barrier. The emulated device keeps each copy pending until a wait
// covers its group, so a read of the destination before the wait sees the old
// bytes (block_runner.cpp).
#pragma once

#ifdef ASTRAI_CUDA_EMULATED
#include "cuda/emulation/kernel_runtime.h"

inline void cp_async_16(void* shared_destination, const void* global_source) {
  ::astrai::emu::async_copy(shared_destination, global_source, 16);
}
inline void cp_async_commit() { ::astrai::emu::async_commit(); }
template <int PendingGroups>
inline void cp_async_wait() {
  ::astrai::emu::async_wait(PendingGroups);
}
#else
__device__ __forceinline__ void cp_async_16(void* shared_destination, const void* global_source) {
  const unsigned destination = static_cast<unsigned>(__cvta_generic_to_shared(shared_destination));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(destination), "l"(global_source) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int PendingGroups>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PendingGroups) : "memory");
}
#endif
