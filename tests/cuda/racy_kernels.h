// Kernels with a planted race each, and their fixed twins, for the race
// detector's tests (test_race_detector.cpp). racy_kernels.cu is compiled like
// the real kernel files (clang++ with the access instrumentation), so the
// detector sees it; each launch queues on the default stream. The *_line
// constants are the source lines a report must name.
#pragma once

#include <cstdint>

namespace astrai::test::racy {

// 64 threads: each writes cell[t] of a shared array and reads cell[t + 1],
// with (fixed) or without a __syncthreads() between.
void shared_neighbour(float* out, bool barrier);
extern const int shared_write_line, shared_read_line;

// Blocks of one launch: block b writes x[b] and reads x[b + 1] (a cross-block
// race), or (fixed) reads an input no block writes.
void global_neighbour(float* x, const float* input, int blocks, bool race);
extern const int global_write_line, global_read_line;

// Block b's thread t reads bytes[ranges[4b] + t] when below ranges[4b + 1]
// and writes bytes[ranges[4b + 2] + t] when below ranges[4b + 3] (one-byte
// accesses), and writes its own byte of sink (blocks * threads bytes): a
// race exactly when one block writes a byte another block reads or writes.
void global_ranges(uint8_t* bytes, const int* ranges, int blocks, int threads, uint8_t* sink);

// Every block adds into one counter with atomicAdd: no race.
void atomic_counter(int* counter, int blocks);

// Lanes of a warp exchange through shared memory, ordered by __syncwarp
// (fixed) or not.
void warp_exchange(float* out, bool syncwarp);
extern const int warp_write_line, warp_read_line;

// Thread t loads x[4t .. 4t + 3] as one float4 (ASTRAI_VECTOR_PTR) and
// writes their sum to out[t]: x must be 16-byte aligned, as on a GPU.
void vector_load(const float* x, float* out, int threads);
extern const int vector_load_line;

// 16 threads cp.async 64 floats into shared memory, then read each other's
// after a barrier, with (fixed) or without cp_async_wait<0>() before it.
void async_tile(const float* global, float* out, bool wait);
extern const int async_issue_line, async_read_line;

}  // namespace astrai::test::racy
