// How a CUDA executor is built (make_cuda_executor of cuda_backend.h, the
// CudaExecutor of cuda_executor.h): plain data, no CUDA include, so the CLI,
// the server and the tests can fill one in without the toolkit.
#pragma once

#include "cuda/dtype.h"

namespace astrai {

struct CudaOptions {
  cuda::DType dtype = cuda::DType::BFloat16;  // weights, GEMM inputs and the KV cache; Float32 for exactness
  int device = 0;                             // CUDA device ordinal
  bool cuda_graphs = true;                    // replay repeated decode-step shapes as CUDA graphs
  // One GEMM algorithm per weight shape for every row count (cuda/gemm.h), so
  // a row's logits never depend on the batch around it; off, each row-count
  // bucket gets the heuristic's algorithm for its size (faster prefill).
  bool batch_invariant = false;
  // Fill every scratch buffer (activations, attention partials, logits) with
  // NaN before each step, graph replays included: for tests, so that a kernel
  // reading what the step did not write (stale values of an earlier step)
  // produces NaN instead of plausible numbers.
  bool poison_scratch = false;
};

}  // namespace astrai
