// The performance report without a GPU: each kernel of a reference decode
// step run once on the emulated device with its memory accesses traced,
// priced with the perf_model rules (sectors, bank conflicts, occupancy from
// ptxas, a roofline), and summed into the step's estimated time against the
// HBM floor. Emulated build only; bench/perf-report.sh runs it.
// docs/cuda-performance.md states the model and its assumptions.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "cuda/perf_model/decode_step.h"
#include "cuda/perf_model/gpu_spec.h"
#include "cuda/perf_model/kernel_resources.h"
#include "cuda/perf_model/roofline.h"

namespace astrai::cuda::perf {

struct KernelLine {
  std::string name;      // the launch ("decode_attention_kernel<Elem>") or "cuBLASLt (modeled)"
  LaunchFigures figures;
  LaunchEstimate estimate;
  bool traced = false;   // false: a cuBLASLt GEMM, modeled (the emulator runs no kernel of ours for it)
  bool resources_known = false;
  KernelResources resources;
  double sector_efficiency = 1.0, bank_ratio = 1.0;  // wavefronts over ideal
  long long traced_blocks = 0;
  std::string worst_site;  // the global access with the lowest sector efficiency: "file:line (NN%)"
};

struct StepPart {
  StepKernel kernel;
  std::vector<KernelLine> launches;
  double seconds = 0;        // one occurrence
  double floor_seconds = 0;  // its ideal bytes at the HBM bandwidth
};

struct StepReport {
  ReferenceShape shape;
  std::vector<StepPart> parts;
  StepBytes bytes;          // step_floor_bytes(shape)
  double bf16_bytes = 0;    // the same shape's with bf16 weights
  double seconds = 0, floor_seconds = 0;
  double percent_of_floor() const { return seconds > 0 ? 100.0 * floor_seconds / seconds : 0.0; }
};

struct ReportOptions {
  std::vector<CompiledKernel> kernels;  // bench/kernel-resources.sh's table; empty: 32 registers assumed
  long long max_traced_blocks = 64;
  std::ostream* progress = nullptr;  // a line per part as it finishes
};

// Runs the step's kernels on the emulated device (with the memory observer
// set for the duration) and prices them.
StepReport report_decode_step(const ReferenceShape& shape, const ReportOptions& options, const GpuSpec& gpu = kH200);

void print_report(std::ostream& out, const StepReport& r, const GpuSpec& gpu = kH200);
// One line per step: weights, bytes per step (weights + KV) and against
// bf16's, the HBM floor, the estimate.
void print_summary(std::ostream& out, const std::vector<StepReport>& reports, const GpuSpec& gpu = kH200);
void print_json(std::ostream& out, const std::vector<StepReport>& reports);

}  // namespace astrai::cuda::perf
