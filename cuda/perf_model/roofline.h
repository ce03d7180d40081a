// The time estimate of one kernel launch and of a decode step: a roofline
// (time = max(bytes / achievable bandwidth, flops / peak)) with the
// achievable bandwidth limited by how many SMs the launch keeps busy and by
// the bytes each SM keeps in flight (Little's law), plus the gap between two
// kernels of a graph. Every input is either measured from the emulator's
// access stream, read from ptxas -v, or one of GpuSpec's labelled
// assumptions; docs/cuda-performance.md states the model and its limits.
#pragma once

#include <string>
#include <vector>

#include "cuda/perf_model/gpu_spec.h"
#include "cuda/perf_model/occupancy.h"

namespace astrai::cuda::perf {

struct LaunchFigures {
  std::string kernel;
  long long blocks = 0;
  int threads_per_block = 0;
  Occupancy occupancy;
  double dram_bytes = 0;          // what HBM moves: unique sectors x 32 (L2 catches re-reads within a launch)
  double ideal_bytes = 0;         // what the kernel must move at the least (the kernel case's figure)
  double flops = 0;
  bool tensor_cores = false;      // flops run on tensor cores (GEMMs) or on the fp32 pipes
  double bytes_per_warp_load = 0; // mean bytes of one warp-level global load (from the access stream)
};

struct LaunchEstimate {
  double seconds = 0;
  double memory_seconds = 0, compute_seconds = 0;
  double floor_seconds = 0;        // ideal_bytes at the full HBM bandwidth
  int active_sms = 0;
  double bandwidth = 0;            // the achievable bandwidth the model used, bytes/s
  std::string bound;               // "memory", "compute", "launch"
  double percent_of_floor() const { return seconds > 0 ? 100.0 * floor_seconds / seconds : 0.0; }
};

LaunchEstimate estimate(const GpuSpec& gpu, const LaunchFigures& f);

}  // namespace astrai::cuda::perf
