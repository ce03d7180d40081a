#include "cuda/perf_model/occupancy.h"

#include <algorithm>
#include <stdexcept>

namespace astrai::cuda::perf {

Occupancy occupancy(const GpuSpec& gpu, const KernelResources& r, int threads_per_block, int dynamic_smem) {
  if (threads_per_block <= 0 || threads_per_block > 1024)
    throw std::invalid_argument("occupancy: " + std::to_string(threads_per_block) + " threads per block");
  const int warps = (threads_per_block + 31) / 32;
  // Registers are allocated per warp, rounded up to the allocation unit.
  const int regs = std::max(r.registers, 1);
  const int regs_per_warp = (regs * 32 + gpu.reg_alloc_unit - 1) / gpu.reg_alloc_unit * gpu.reg_alloc_unit;
  const int by_regs = gpu.regs_per_sm / (regs_per_warp * warps);
  const int by_threads = gpu.max_threads_per_sm / (warps * 32);
  const int smem = r.static_smem + dynamic_smem;
  if (smem > gpu.max_smem_per_block)
    throw std::invalid_argument("occupancy: " + std::to_string(smem) + " bytes of shared memory in one block");
  const int by_smem = smem == 0 ? gpu.max_blocks_per_sm : gpu.smem_per_sm / (smem + gpu.smem_reserved_per_block);
  Occupancy o;
  o.blocks_per_sm = gpu.max_blocks_per_sm;
  o.limited_by = "blocks";
  const auto limit = [&](int n, const char* why) {
    if (n < o.blocks_per_sm) {
      o.blocks_per_sm = n;
      o.limited_by = why;
    }
  };
  limit(by_threads, "threads");
  limit(by_regs, "registers");
  limit(by_smem, "shared memory");
  if (o.blocks_per_sm == 0)
    throw std::invalid_argument("occupancy: a block of " + std::to_string(threads_per_block) + " threads at " +
                                std::to_string(regs) + " registers does not fit an SM");
  o.warps_fraction = double(o.blocks_per_sm * warps) / double(gpu.max_threads_per_sm / 32);
  return o;
}

}  // namespace astrai::cuda::perf
