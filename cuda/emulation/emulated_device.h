// What tests can ask of the emulated device (-Dcuda=emulated) beyond the CUDA
// runtime API: how much work it ran, and the order of threads in a block.
// Only the emulated build has these; code that uses them is guarded by
// ASTRAI_CUDA_EMULATED.
#pragma once

#include <cstdint>
#include <string>

#include "cuda/emulation/block_runner.h"

namespace astrai::emu {

struct EmulationCounters {
  uint64_t kernel_launches = 0;  // launches issued, directly or by graph launches
  uint64_t kernels_run = 0;      // launches executed (at synchronisation)
  uint64_t graph_launches = 0;   // cudaGraphLaunch calls
  uint64_t peak_device_bytes = 0;  // the most device memory live at once (cudaMalloc minus cudaFree)
};

EmulationCounters counters();

// The row count (columns of D, cuBLASLt being column-major) that the
// heuristic was asked about when it chose the algorithm of the last
// cublasLtMatmul call; -1 before any. Each emulated algorithm carries it, so
// tests can see which algorithm a GEMM of some size ran with.
int64_t last_matmul_algorithm_rows();
// The split-K count of the last cublasLtMatmul call's algorithm; -1 before any.
int64_t last_matmul_split_k();
// While on, the heuristic offers only algorithms that split K (4 and 2
// ways), as the H200's cuBLASLt 13.0 did for a 512 x 1376 weight at 64
// rows in f32 and bf16 (the first GPU run); off by default.
void heuristic_offers_only_split_k(bool on);

// Clears the sticky error a kernel fault leaves (a GPU would need a new
// process); for tests that plant faults on purpose.
void reset_after_fault();

// The message of the last kernel fault (also printed to stderr), "" before any.
std::string last_kernel_fault();

}  // namespace astrai::emu
