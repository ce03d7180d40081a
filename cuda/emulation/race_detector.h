// A race detector for emulated kernels, in the spirit of compute-sanitizer's
// racecheck: it sees every access of kernel code (memory_trace.h) and faults
// (KernelFault, naming the kernel and both source lines) on
//   - shared memory: two different threads of a block touching the same byte
//     in the same barrier interval (no __syncthreads() between them), at
//     least one of them writing. Two lanes of one warp separated by a warp
//     collective (__syncwarp, a shuffle, a vote) are ordered;
//   - global memory: two different blocks of one launch touching the same
//     byte, at least one of them writing (blocks of a launch are unordered).
// Atomics never race (they are not plain accesses). A cp.async copy counts as
// a read of its source and a write of its destination by the issuing thread
// when its wait completes it; until then any access to its destination, by
// any thread, is a fault naming the copy's line (a missing or late
// cp_async_wait).
//
// Shadow state: per byte of shared memory the last write and the last reads
// (thread, barrier interval, warp interval, pc); per byte of global memory
// touched by the launch the writing block and reading block(s). A read after
// several concurrent reads keeps one of them, so a report names one of the
// readers. Accesses by one thread to its own data never race.
//
// On by default in the emulated build; ASTRAI_EMULATION_RACECHECK=0 in the
// environment turns it off at start-up (to measure its cost).
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/emulation/memory_trace.h"

namespace astrai::emu {

void set_race_detection(bool on);
bool race_detection();

// Called by memory_access_hooks.cpp (the launch's OS thread).
void race_launch_begin(const KernelLaunch& launch);
void race_launch_end();
void race_block_begin();
void race_check(uintptr_t address, size_t bytes, bool store, MemorySpace space, const void* pc);
void race_copy_pending(uintptr_t shared_address, size_t bytes, const void* pc, bool pending);

}  // namespace astrai::emu
