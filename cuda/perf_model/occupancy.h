// How many blocks of a kernel one SM holds at once, from the launch's
// threads per block and dynamic shared memory and the compiled kernel's
// registers and static shared memory (ptxas -v): the minimum over the four
// limits, as the CUDA Occupancy Calculator computes it.
#pragma once

#include <string>

#include "cuda/perf_model/gpu_spec.h"

namespace astrai::cuda::perf {

struct KernelResources {
  int registers = 0;     // per thread (ptxas -v "Used N registers")
  int static_smem = 0;   // bytes (ptxas -v "N bytes smem")
  int spill_bytes = 0;   // spill stores + loads (ptxas -v), 0 for a kernel that does not spill
};

struct Occupancy {
  int blocks_per_sm = 0;
  std::string limited_by;  // "registers", "threads", "blocks", "shared memory"
  double warps_fraction = 0.0;  // resident warps over the SM's 64
};

// Throws std::invalid_argument for a block that does not fit an SM at all.
Occupancy occupancy(const GpuSpec& gpu, const KernelResources& r, int threads_per_block, int dynamic_smem);

}  // namespace astrai::cuda::perf
