// Linear layers on the GPU through cuBLASLt: y = x W^T with x and W in the
// storage type (bf16 or float32), float32 accumulation and float32 output.
// Reference: linear() in reference/linear.cpp.
//
// Batch invariance: the algorithm is chosen once per weight shape (out, in,
// dtype), from cuBLASLt's heuristic for kAlgoRows rows, among algorithms
// without split-K, and the same algorithm then serves every row count. A
// tiled GEMM without split-K reduces each output element over `in` in the
// same order whatever the number of rows, so a row's result does not depend
// on what else is in the batch. If that algorithm does not support some row
// count (cublasLtMatmulAlgoCheck fails), that row count gets its own
// algorithm and batch_invariant() turns false, with the reason in
// invariance_note().
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "cuda/dtype.h"

namespace astrai::cuda {

class GemmRunner {
 public:
  static constexpr int kAlgoRows = 64;
  static constexpr size_t kWorkspaceBytes = 32u << 20;

  GemmRunner();
  ~GemmRunner();
  GemmRunner(const GemmRunner&) = delete;
  GemmRunner& operator=(const GemmRunner&) = delete;

  // y[rows, out] (float32, row-major) = x[rows, in] W[out, in]^T, both `dtype`,
  // row-major and dense. Asynchronous on `stream`; capturable in a CUDA graph
  // once the shape has been run before (the first run of a shape queries
  // cuBLASLt's heuristics, which is host work only).
  void run(const void* x, const void* w, DType dtype, int rows, int in, int out, float* y, cudaStream_t stream);

  bool batch_invariant() const;
  std::string invariance_note() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace astrai::cuda
