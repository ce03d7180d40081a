#include "cuda/perf_model/roofline.h"

#include <algorithm>

namespace astrai::cuda::perf {

namespace {

// The bandwidth a round of `blocks` concurrently resident blocks achieves.
double round_bandwidth(const GpuSpec& gpu, const LaunchFigures& f, long long blocks) {
  const int busy_sms = int(std::min<long long>(gpu.sms, blocks));
  // The hardware spreads blocks over idle SMs first.
  const double blocks_per_sm = double(blocks) / double(busy_sms);
  const double warps_per_sm = blocks_per_sm * double((f.threads_per_block + 31) / 32);
  // Little's law: an SM pulls at most (bytes in flight) / latency.
  const double in_flight = warps_per_sm * gpu.loads_in_flight_per_warp *
                           (f.bytes_per_warp_load > 0 ? f.bytes_per_warp_load : 128.0);
  const double per_sm = std::min(gpu.per_sm_bytes_per_s, in_flight / gpu.dram_latency_s);
  return std::min(gpu.hbm_bytes_per_s, per_sm * busy_sms);
}

}  // namespace

LaunchEstimate estimate(const GpuSpec& gpu, const LaunchFigures& f) {
  LaunchEstimate e;
  if (f.blocks <= 0) return e;
  const long long resident = static_cast<long long>(gpu.sms) * std::max(f.occupancy.blocks_per_sm, 1);
  e.active_sms = int(std::min<long long>(gpu.sms, f.blocks));
  // Rounds of resident blocks, the last one possibly partial: each round
  // moves its blocks' share of the bytes at the bandwidth its blocks reach.
  const long long full_rounds = f.blocks / resident, rest = f.blocks % resident;
  const double bytes_per_block = f.dram_bytes / double(f.blocks);
  if (full_rounds > 0) e.memory_seconds += double(full_rounds * resident) * bytes_per_block / round_bandwidth(gpu, f, resident);
  if (rest > 0) e.memory_seconds += double(rest) * bytes_per_block / round_bandwidth(gpu, f, rest);
  e.bandwidth = e.memory_seconds > 0 ? f.dram_bytes / e.memory_seconds : 0.0;
  const double peak = f.tensor_cores ? gpu.bf16_tensor_flops : gpu.fp32_flops;
  e.compute_seconds = f.flops / (peak * double(e.active_sms) / double(gpu.sms));
  const double work = std::max(e.memory_seconds, e.compute_seconds);
  e.seconds = work + gpu.kernel_gap_s;
  e.floor_seconds = f.ideal_bytes / gpu.hbm_bytes_per_s;
  e.bound = gpu.kernel_gap_s > work ? "launch" : e.memory_seconds >= e.compute_seconds ? "memory" : "compute";
  return e;
}

}  // namespace astrai::cuda::perf
