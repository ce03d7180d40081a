// Linear layers on the GPU through cuBLASLt: y = x W^T with x and W in the
// storage type (bf16 or float32), float32 accumulation and float32 output.
// Reference: linear() in reference/linear.cpp.
//
// Algorithms, chosen from cuBLASLt's heuristic among those without split-K
// (a tiled GEMM without split-K reduces each output element over `in` in one
// order whatever the number of rows), one per weight shape (out, in, dtype)
// and per row-count bucket:
//  - GemmAlgorithms::PerRowBucket (the default): buckets 1-64, 65-128,
//    129-256, ... up to 4096 and above, each with the heuristic's choice for
//    its largest row count, so a prefill of 2,000 rows gets large tiles and a
//    decode step of 8 rows small ones. A row's bits are the same for every
//    row count within a bucket, and may differ between buckets.
//  - GemmAlgorithms::OnePerShape (batch invariant, CudaOptions::batch_invariant):
//    the heuristic's choice for kDecodeRows rows serves every row count, so a
//    row's result never depends on the batch around it. If that algorithm does
//    not support some row count (cublasLtMatmulAlgoCheck fails), that row count
//    gets its own algorithm and batch_invariant() turns false, with the reason
//    in invariance_note().
#pragma once
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "cuda/dtype.h"

namespace astrai::cuda {

enum class GemmAlgorithms { PerRowBucket, OnePerShape };

class GemmRunner {
 public:
  static constexpr int kDecodeRows = 64;    // the first bucket's top, and OnePerShape's representative
  static constexpr int kLargestBucket = 4096;
  static constexpr size_t kWorkspaceBytes = 32u << 20;

  explicit GemmRunner(GemmAlgorithms choice = GemmAlgorithms::PerRowBucket);
  ~GemmRunner();
  GemmRunner(const GemmRunner&) = delete;
  GemmRunner& operator=(const GemmRunner&) = delete;

  // y[rows, out] (float32, row-major) = x[rows, in] W[out, in]^T, both `dtype`,
  // row-major and dense. Asynchronous on `stream`; capturable in a CUDA graph
  // once the shape has been run before (the first run of a shape queries
  // cuBLASLt's heuristics, which is host work only).
  void run(const void* x, const void* w, DType dtype, int rows, int in, int out, float* y, cudaStream_t stream);

  // The row count whose heuristic choice serves a GEMM of `rows` rows.
  static int algorithm_rows(int rows, GemmAlgorithms choice);

  GemmAlgorithms choice() const;
  // True when every GEMM so far used its shape's one algorithm (OnePerShape
  // with no exception); false for PerRowBucket.
  bool batch_invariant() const;
  std::string invariance_note() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace astrai::cuda
