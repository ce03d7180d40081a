// Runs one emulated kernel launch on the calling OS thread: its blocks one
// after another (in a shuffled order with a seed, below), each block's CUDA
// threads as fibers (Boost.Context) that switch only where CUDA threads wait for
// each other, __syncthreads() and warp collectives. Between two such points a thread runs alone, so the order in which
// the threads of a block run is a free choice: an option shuffles it, and a
// correct kernel gives the same bits either way.
//
// What a GPU would not tell you, reported here as a KernelFault naming the
// kernel, the block and the barriers: a thread that waits at a different
// __syncthreads() than the rest of its block, threads that exit while others
// wait at a barrier (a hang on a GPU), a shuffle whose mask leaves out a live
// lane of the warp, a thread that overflows its fiber stack (a guard page),
// and, through the race detector (race_detector.h), two threads or blocks
// touching the same bytes unordered, one of them writing. A fault found
// inside a CUDA thread (a race, a bad shuffle width) switches back to the
// block's scheduler, which throws it; the thread is never resumed.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda/emulation/kernel_runtime.h"

namespace astrai::emu {

class KernelFault : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Runs every block of `launch`. Throws KernelFault on a fault (the remaining
// blocks do not run). Dynamic shared memory is filled with NaN bytes at each
// block's start, so a read of shared memory no thread wrote shows up.
void run_kernel(const KernelLaunch& launch);

// "kernel K, block (x,y,z), thread (x,y,z)" for the CUDA thread this OS
// thread is running, or "host code" outside a kernel (for fault reports).
std::string running_thread_description();

// 0 (the default): the blocks of a launch run in index order, and the
// threads of a block in index order between synchronisation points.
// Otherwise both orders are permutations drawn from this seed (one for the
// blocks of each launch, one for every phase of every block), the same for
// the same seed. Also set by the environment variable
// ASTRAI_EMULATION_THREAD_ORDER_SEED at start-up.
void set_thread_order_seed(uint64_t seed);
uint64_t thread_order_seed();

}  // namespace astrai::emu
