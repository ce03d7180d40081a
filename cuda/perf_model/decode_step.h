// The two reference decode steps the performance report prices, as the
// kernel cases that make them up: the launch sequence of
// CudaExecutor's enqueue() (cuda/cuda_executor.cpp) for a Llama-3-8B-shaped
// model in bf16, then the device sampler. tests/cuda/test_perf_report.cpp
// checks this list against the kernels a real decode step launches.
#pragma once

#include <string>
#include <vector>

#include "cuda/kernel_cases/kernel_case.h"

namespace astrai::cuda::perf {

struct ReferenceShape {
  std::string name;  // "8b-b1-c1k"
  int dim = 4096, n_heads = 32, n_kv_heads = 8, head_dim = 128, hidden = 14336, vocab = 128256, layers = 32;
  int batch = 1, context = 1024;  // decode rows, and the positions each row attends to (its own included)
  int max_seq_len = 8192;         // Llama 3's context: what the executor sizes its attention splits from
};

// Llama-3-8B at batch 1 with 1k context, and at batch 64 with 2k context.
std::vector<ReferenceShape> reference_shapes();

struct StepKernel {
  std::string what;        // "layer: qkv projection"
  std::string case_name;   // a kernel case's name ("gemm")
  cases::KernelShape shape;
  int per_step = 1;        // launches of it in one decode step
  double ideal_bytes = 0;  // what this part of the step must move: weights, activations, KV cache read and write
};

std::vector<StepKernel> decode_step(const ReferenceShape& s);

// Bytes of the model's weights a decode step reads (every matrix once, the
// classifier for the wanted rows) plus the KV cache it reads: the HBM floor's numerator.
double step_floor_bytes(const ReferenceShape& s);

}  // namespace astrai::cuda::perf
