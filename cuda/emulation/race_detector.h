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
// (thread, barrier interval, warp interval, pc). Global memory: a bit per
// byte of each page the launch touches, for the running block's reads and
// writes and for the earlier blocks' (the launch's accesses also logged, 24
// bytes each); when a block ends its bits are checked against the earlier
// blocks', and only on a conflict is the log replayed byte by byte to name
// the two accesses. The blocks of a launch are unordered, so checking at a
// block's end finds the races checking at each access would, and reports
// the same pair. A read after several concurrent
// reads keeps one of them, so a report names one of the readers. Accesses by
// one thread to its own data never race.
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
// The block ran to its end: its global accesses against the launch's other
// blocks'. Throws KernelFault on a race.
void race_block_end();
void race_check(uintptr_t address, size_t bytes, bool store, MemorySpace space, const void* pc);
void race_copy_pending(uintptr_t shared_address, size_t bytes, const void* pc, bool pending);

}  // namespace astrai::emu
