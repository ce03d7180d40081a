// GemmRunner: the mat-vec kernel for up to 8 rows, else cuBLASLt descriptors
// and one cached algorithm per weight shape and row-count bucket (gemm.h).
//
// cuBLASLt is column-major. Row-major y[rows, out] is column-major y^T
// [out, rows] = W x^T, and row-major W[out, in] is column-major W^T [in, out]:
// so the matmul is D = op(A) B with A = W (in x out, ld in, op = transpose),
// B = x^T (in x rows, ld in), D = y^T (out x rows, ld out).
#include "cuda/gemm.h"

#include <cublasLt.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

#include "cuda/cuda_check.h"
#include "cuda/device_buffer.h"
#include "cuda/kernels/kernels.h"

#define ASTRAI_CUBLAS_CHECK(call)                                                                 \
  do {                                                                                            \
    const cublasStatus_t astrai_blas_status_ = (call);                                            \
    if (astrai_blas_status_ != CUBLAS_STATUS_SUCCESS)                                             \
      throw std::runtime_error(std::string("cuBLASLt error in ") + #call + ": status " +          \
                               std::to_string(int(astrai_blas_status_)));                         \
  } while (0)

namespace astrai::cuda {
namespace {

cudaDataType_t cuda_type(DType t) { return t == DType::Float32 ? CUDA_R_32F : CUDA_R_16BF; }

// The descriptors of one problem shape.
struct Problem {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;

  Problem(DType dtype, int rows, int in, int out, int ldy) {
    ASTRAI_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t transpose = CUBLAS_OP_T, none = CUBLAS_OP_N;
    ASTRAI_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose));
    ASTRAI_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &none, sizeof none));
    ASTRAI_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&a, cuda_type(dtype), uint64_t(in), uint64_t(out), in));
    ASTRAI_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&b, cuda_type(dtype), uint64_t(in), uint64_t(rows), in));
    ASTRAI_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d, CUDA_R_32F, uint64_t(out), uint64_t(rows), ldy));
  }
  ~Problem() {
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
  Problem(const Problem&) = delete;
  Problem& operator=(const Problem&) = delete;
};

uint32_t splitk_of(const cublasLtMatmulAlgo_t& algo) {
  uint32_t splits = 1;
  size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits, sizeof splits,
                                           &written) != CUBLAS_STATUS_SUCCESS)
    return 0;  // unknown: treated as split
  return splits;
}

}  // namespace

struct GemmRunner::Impl {
  using ShapeKey = std::tuple<int, int, DType, int>;      // out, in, dtype, algorithm_rows
  using ProblemKey = std::tuple<int, int, DType, int, int>;  // ... and rows, ldy
  struct Prepared {
    std::unique_ptr<Problem> problem;
    cublasLtMatmulAlgo_t algo{};
  };

  GemmAlgorithms choice;
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  DeviceBuffer workspace;
  DeviceBuffer dequantized;  // reserve_dequantize(): kDequantizeRows rows of a quantized matrix in the storage type
  std::map<ShapeKey, cublasLtMatmulAlgo_t> shape_algo;
  std::map<ProblemKey, Prepared> prepared;
  std::string note;

  explicit Impl(GemmAlgorithms c) : choice(c), workspace(kWorkspaceBytes, "the cuBLASLt workspace") {
    ASTRAI_CUBLAS_CHECK(cublasLtCreate(&handle));
    ASTRAI_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
    const uint64_t bytes = kWorkspaceBytes;
    ASTRAI_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                             &bytes, sizeof bytes));
  }
  ~Impl() {
    prepared.clear();
    if (preference) cublasLtMatmulPreferenceDestroy(preference);
    if (handle) cublasLtDestroy(handle);
  }

  // The heuristic's best algorithm for this problem; without split-K unless
  // allowed (or its best one at all when every candidate splits K, noted).
  cublasLtMatmulAlgo_t heuristic_algo(const Problem& p, const char* what, bool allow_split_k) {
    constexpr int kCandidates = 16;
    cublasLtMatmulHeuristicResult_t results[kCandidates] = {};
    int returned = 0;
    ASTRAI_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(handle, p.op, p.a, p.b, p.d, p.d, preference, kCandidates,
                                                       results, &returned));
    if (returned == 0) throw std::runtime_error(std::string("cuBLASLt has no algorithm for ") + what);
    for (int i = 0; i < returned; ++i)
      if (results[i].state == CUBLAS_STATUS_SUCCESS && (allow_split_k || splitk_of(results[i].algo) == 1))
        return results[i].algo;
    // Every candidate splits K (the H200's heuristic does for skinny shapes,
    // to fill 132 multiprocessors): the best one with its split count set to
    // one, if cuBLASLt accepts that configuration for this problem.
    for (int i = 0; i < returned; ++i) {
      if (results[i].state != CUBLAS_STATUS_SUCCESS) continue;
      cublasLtMatmulAlgo_t unsplit = results[i].algo;
      const int32_t one = 1;
      const uint32_t no_reduction = CUBLASLT_REDUCTION_SCHEME_NONE;
      cublasLtMatmulHeuristicResult_t check{};
      if (cublasLtMatmulAlgoConfigSetAttribute(&unsplit, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &one, sizeof one) ==
              CUBLAS_STATUS_SUCCESS &&
          cublasLtMatmulAlgoConfigSetAttribute(&unsplit, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &no_reduction,
                                               sizeof no_reduction) == CUBLAS_STATUS_SUCCESS &&
          cublasLtMatmulAlgoCheck(handle, p.op, p.a, p.b, p.d, p.d, &unsplit, &check) == CUBLAS_STATUS_SUCCESS &&
          check.workspaceSize <= kWorkspaceBytes && splitk_of(unsplit) == 1)
        return unsplit;
    }
    note += std::string("every candidate for ") + what + " splits K; ";
    return results[0].algo;
  }

  const Prepared& prepare(DType dtype, int rows, int in, int out, int ldy) {
    const ProblemKey key{out, in, dtype, rows, ldy};
    if (auto it = prepared.find(key); it != prepared.end()) return it->second;
    const std::string what = "y[" + std::to_string(rows) + "x" + std::to_string(out) + "] = x W^T with W[" +
                             std::to_string(out) + "x" + std::to_string(in) + "] " + dtype_name(dtype);
    const int algorithm_rows = GemmRunner::algorithm_rows(rows, choice);
    const bool split_k = GemmRunner::route(rows, choice) == Route::CublasLtSplitK;
    const ShapeKey shape{out, in, dtype, algorithm_rows};
    auto algo = shape_algo.find(shape);
    if (algo == shape_algo.end()) {
      const Problem representative(dtype, algorithm_rows, in, out, out);
      algo = shape_algo.emplace(shape, heuristic_algo(representative, what.c_str(), split_k)).first;
    }
    Prepared ready;
    ready.problem = std::make_unique<Problem>(dtype, rows, in, out, ldy);
    ready.algo = algo->second;
    cublasLtMatmulHeuristicResult_t check{};
    if (cublasLtMatmulAlgoCheck(handle, ready.problem->op, ready.problem->a, ready.problem->b, ready.problem->d,
                                ready.problem->d, &ready.algo, &check) != CUBLAS_STATUS_SUCCESS ||
        check.workspaceSize > kWorkspaceBytes) {
      note += "the shared algorithm does not support " + what + ", which has its own; ";
      ready.algo = heuristic_algo(*ready.problem, what.c_str(), split_k);
    }
    return prepared.emplace(key, std::move(ready)).first->second;
  }
};

GemmRunner::GemmRunner(GemmAlgorithms choice) : impl_(std::make_unique<Impl>(choice)) {}
GemmRunner::~GemmRunner() = default;

void GemmRunner::run(const void* x, const void* w, DType dtype, int rows, int in, int out, float* y,
                     cudaStream_t stream, int ldy) {
  if (ldy == 0) ldy = out;
  if (rows == 0) return;
  if (route(rows, impl_->choice) == Route::Matvec) return launch_matvec(x, w, dtype, rows, in, out, y, ldy, stream);
  const Impl::Prepared& p = impl_->prepare(dtype, rows, in, out, ldy);
  const float alpha = 1.0f, beta = 0.0f;
  ASTRAI_CUBLAS_CHECK(cublasLtMatmul(impl_->handle, p.problem->op, &alpha, w, p.problem->a, x, p.problem->b, &beta,
                                     y, p.problem->d, y, p.problem->d, &p.algo, impl_->workspace.get(),
                                     kWorkspaceBytes, stream));
}

void GemmRunner::reserve_dequantize(int cols, DType dtype) {
  const size_t bytes = size_t(kDequantizeRows) * size_t(cols) * dtype_size(dtype);
  if (impl_->dequantized.bytes() < bytes)
    impl_->dequantized = DeviceBuffer(bytes, "the decoding buffer of quantized weights (prefill)");
}

void GemmRunner::run(const void* x, const DeviceMatrix& w, DType dtype, int rows, float* y, cudaStream_t stream) {
  const int ldy = w.rows();
  int column = 0;
  for (const WeightPart& part : w.parts) {
    float* slice = y + column;
    if (!part.quant) {
      run(x, part.data.get(), dtype, rows, w.cols, part.rows, slice, stream, ldy);
    } else if (rows <= kMatvecMaxRows && impl_->choice == GemmAlgorithms::PerRowBucket) {
      launch_matvec_quant(x, dtype, part.data.get(), *part.quant, rows, w.cols, part.rows, slice, ldy, stream);
    } else {
      // Decoded kDequantizeRows output rows at a time, each slice multiplied
      // by cuBLASLt into its columns (OnePerShape too: batch invariance needs
      // one algorithm for every row count, which the mat-vec is not).
      const size_t row_bytes = quant_matrix_bytes(*part.quant, 1, size_t(w.cols));
      if (impl_->dequantized.bytes() < size_t(std::min(kDequantizeRows, part.rows)) * size_t(w.cols) * dtype_size(dtype))
        throw std::logic_error("GemmRunner: reserve_dequantize() was not called for this matrix");
      for (int first = 0; first < part.rows; first += kDequantizeRows) {
        const int n = std::min(kDequantizeRows, part.rows - first);
        launch_dequantize(static_cast<const char*>(part.data.get()) + size_t(first) * row_bytes, *part.quant, n, w.cols,
                          impl_->dequantized.get(), dtype, stream);
        run(x, impl_->dequantized.get(), dtype, rows, w.cols, n, slice + first, stream, ldy);
      }
    }
    column += part.rows;
  }
}

bool GemmRunner::fuses(const DeviceMatrix& w, int rows) const {
  return rows >= 1 && route(rows, impl_->choice) == Route::Matvec &&
         std::none_of(w.parts.begin(), w.parts.end(), [](const WeightPart& p) { return p.quant.has_value(); });
}

void GemmRunner::run(const void* x, const DeviceMatrix& w, DType dtype, int rows, float* y, cudaStream_t stream,
                     const MatvecFusion& fusion) {
  if (!fuses(w, rows))
    throw std::logic_error("GemmRunner: " + std::to_string(rows) + " rows of this matrix do not take the fused mat-vec");
  MatvecFusion part_fusion = fusion;
  int column = 0;
  for (const WeightPart& part : w.parts) {
    if (fusion.bias) part_fusion.bias = static_cast<const char*>(fusion.bias) + size_t(column) * dtype_size(dtype);
    launch_matvec(x, part.data.get(), dtype, rows, w.cols, part.rows, y + column, w.rows(), stream, part_fusion);
    part_fusion.store = nullptr;  // the first part's launch wrote it
    column += part.rows;
  }
}

GemmRunner::Route GemmRunner::route(int rows, GemmAlgorithms choice) {
  if (choice == GemmAlgorithms::OnePerShape) return Route::CublasLt;
  if (rows <= kMatvecMaxRows) return Route::Matvec;
  return rows <= kDecodeRows ? Route::CublasLtSplitK : Route::CublasLt;
}

int GemmRunner::algorithm_rows(int rows, GemmAlgorithms choice) {
  if (choice == GemmAlgorithms::OnePerShape || rows <= kDecodeRows) return kDecodeRows;
  int bucket = kDecodeRows;
  while (bucket < rows && bucket < kLargestBucket) bucket *= 2;
  return bucket;
}

GemmAlgorithms GemmRunner::choice() const { return impl_->choice; }
bool GemmRunner::batch_invariant() const { return impl_->choice == GemmAlgorithms::OnePerShape && impl_->note.empty(); }
std::string GemmRunner::invariance_note() const { return impl_->note; }

}  // namespace astrai::cuda
