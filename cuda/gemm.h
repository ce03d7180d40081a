// Linear layers on the GPU: y = x W^T with x and W in the storage type (bf16
// or float32), float32 accumulation and float32 output.
// Reference: linear() in reference/linear.cpp.
//
// Who computes which GEMM (GemmRunner::route()):
//  - GemmAlgorithms::PerRowBucket (the default):
//     * 1 to kMatvecMaxRows (8) rows: launch_matvec (cuda/kernels/matvec.cu),
//       a mat-vec kernel that reads W once with 16-byte loads for all rows
//       and spreads the outputs over every SM (cuBLASLt's smallest tiles put
//       32-96 CTAs on 132 SMs for the decode shapes). A row's bits are the
//       same for every row count 1..8.
//     * 9 to 64 rows: cuBLASLt with the heuristic's first algorithm, split-K
//       allowed: few rows leave few output tiles, and splitting K is how
//       cuBLASLt fills the GPU then. Every cuBLASLt reduction scheme is
//       ordered (INPLACE: "counters ... guarantee the sequentiality";
//       COMPUTE_TYPE/OUTPUT_TYPE: a separate reduction step; cublasLt.h), so
//       with the split count fixed by the bucket's algorithm a row's bits are
//       still the same for every row count in the bucket.
//     * 65-128, 129-256, ... up to 4096 and above: cuBLASLt, the heuristic's
//       first algorithm without split-K for the bucket's largest row count,
//       so a prefill of 2,000 rows gets large tiles. A row's bits are the
//       same within a bucket and may differ between buckets.
//  - GemmAlgorithms::OnePerShape (batch invariant, CudaOptions::batch_invariant):
//    cuBLASLt only (the mat-vec would give rows 1-8 other bits than rows 9+),
//    the heuristic's choice without split-K for kDecodeRows rows serving
//    every row count, so a row's result never depends on the batch around
//    it. If that algorithm does not support some row count
//    (cublasLtMatmulAlgoCheck fails), that row count gets its own algorithm
//    and batch_invariant() turns false, with the reason in invariance_note().
// Measured once on an H200 (docs/cuda.md, "Skinny GEMMs"): the mat-vec wins at
// 1 row and loses to cuBLASLt at 8.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "cuda/device_matrix.h"
#include "cuda/dtype.h"

namespace astrai::cuda {

struct MatvecFusion;  // cuda/kernels/kernels.h

enum class GemmAlgorithms { PerRowBucket, OnePerShape };

class GemmRunner {
 public:
  static constexpr int kDecodeRows = 64;    // the first cuBLASLt bucket's top, and OnePerShape's representative
  static constexpr int kLargestBucket = 4096;
  static constexpr size_t kWorkspaceBytes = 32u << 20;

  explicit GemmRunner(GemmAlgorithms choice = GemmAlgorithms::PerRowBucket);
  ~GemmRunner();
  GemmRunner(const GemmRunner&) = delete;
  GemmRunner& operator=(const GemmRunner&) = delete;

  // y[rows, out] (float32, row-major, rows ldy apart; ldy 0 means out) =
  // x[rows, in] W[out, in]^T, both `dtype`, row-major and dense.
  // Asynchronous on `stream`; capturable in a CUDA graph once the shape has
  // been run before (the first run of a shape queries cuBLASLt's heuristics,
  // which is host work only).
  void run(const void* x, const void* w, DType dtype, int rows, int in, int out, float* y, cudaStream_t stream,
           int ldy = 0);

  // The same for a DeviceMatrix, part by part into y's column slices
  // (x [rows, w.cols] in `dtype`, y [rows, w.rows()]). A quantized part is
  // multiplied by the quantized mat-vec up to kMatvecMaxRows rows
  // (matvec_quant.cu); above, it is decoded to `dtype` slice by slice
  // (kDequantizeRows rows at a time, dequantize.cu) into a buffer
  // reserve_dequantize() made, and multiplied by cuBLASLt as above.
  void run(const void* x, const DeviceMatrix& w, DType dtype, int rows, float* y, cudaStream_t stream);
  // The same through the mat-vec's fused forms (MatvecFusion, kernels.h):
  // the prologue's norm in each part's launch (`store` written by the first
  // part's), the epilogue's add into y's columns (bias [w.rows()] of `dtype`,
  // each part its slice). Only where fuses(w, rows); throws elsewhere.
  void run(const void* x, const DeviceMatrix& w, DType dtype, int rows, float* y, cudaStream_t stream,
           const MatvecFusion& fusion);
  // Whether `rows` rows of w take the mat-vec with its fused forms: the
  // mat-vec route (rows 1..kMatvecMaxRows, PerRowBucket) and no quantized part.
  bool fuses(const DeviceMatrix& w, int rows) const;
  // Makes the decoding buffer for quantized matrices of up to `cols` input
  // features in `dtype` (before any graph is captured: capture cannot allocate).
  void reserve_dequantize(int cols, DType dtype);
  static constexpr int kDequantizeRows = 2048;

  enum class Route { Matvec, CublasLtSplitK, CublasLt };
  // What computes a GEMM of `rows` rows (above).
  static Route route(int rows, GemmAlgorithms choice);
  // The row count whose heuristic choice serves a cuBLASLt GEMM of `rows` rows.
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
