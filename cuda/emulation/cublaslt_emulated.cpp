// The cuBLASLt functions AstrAI calls (cuda/gemm.cpp), on the CPU, for the
// emulated build: linked instead of libcublasLt, declarations from the real
// <cublasLt.h>.
//
// It honours the descriptors exactly: column-major layouts with their leading
// dimensions, TRANSA/TRANSB, CUDA_R_32F or CUDA_R_16BF inputs, a CUDA_R_32F
// output, CUBLAS_COMPUTE_32F with float alpha and beta. A combination this
// stand-in does not implement is refused (CUBLAS_STATUS_NOT_SUPPORTED), as
// cuBLASLt refuses combinations it has no kernel for, never computed wrongly.
// Each output element is one float32 dot product in k order: the result of a
// row never depends on the number of rows (unlike cuBLASLt's own kernels,
// whose invariance only a GPU run can show). The product runs when its
// stream is synchronised, like every emulated launch.
#include <cublasLt.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>

#include "cuda/emulation/emulated_device.h"
#include "cuda/emulation/host_work.h"

struct cublasLtContext {
  int magic = 0x1ab1a5;
};

namespace astrai::emu {

namespace {

struct Layout {
  cudaDataType type;
  uint64_t rows, cols;
  int64_t ld;
};
struct MatmulDesc {
  cublasComputeType_t compute;
  cudaDataType_t scale;
  cublasOperation_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
};
struct Preference {
  uint64_t max_workspace = 0;
};
constexpr uint64_t kAlgoMarker = 0xa57a1e;
std::atomic<int64_t> g_last_algorithm_rows{-1};
std::atomic<int64_t> g_last_split_k{-1};
std::atomic<bool> g_only_split_k{false};
// An algorithm's words: [0] the marker, [1] the row count it was chosen
// for, [2] its split-K count (0 = 1), [3] its reduction scheme.
int32_t split_k_of(const cublasLtMatmulAlgo_t& algo) { return algo.data[2] == 0 ? 1 : int32_t(algo.data[2]); }


// Our descriptors live in the opaque structs' data arrays, copied in and out.
template <typename T, size_t N>
T read(const uint64_t (&data)[N]) {
  static_assert(sizeof(T) <= sizeof data);
  T value;
  std::memcpy(&value, data, sizeof value);
  return value;
}
template <typename T, size_t N>
void write(uint64_t (&data)[N], const T& value) {
  static_assert(sizeof(T) <= sizeof data);
  std::memcpy(data, &value, sizeof value);
}
Layout layout(cublasLtMatrixLayout_t l) { return read<Layout>(l->data); }
MatmulDesc desc(cublasLtMatmulDesc_t d) { return read<MatmulDesc>(d->data); }

bool input_type(cudaDataType t) { return t == CUDA_R_32F || t == CUDA_R_16BF; }

// The shape of D = op(A) op(B) (+ C), or NOT_SUPPORTED / INVALID_VALUE.
cublasStatus_t check(cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                     cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d) {
  if (!op || !a || !b || !c || !d) return CUBLAS_STATUS_INVALID_VALUE;
  const MatmulDesc& m = desc(op);
  if (m.compute != CUBLAS_COMPUTE_32F || m.scale != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
  const Layout &A = layout(a), &B = layout(b), &C = layout(c), &D = layout(d);
  if (!input_type(A.type) || A.type != B.type || D.type != CUDA_R_32F || C.type != D.type)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  const uint64_t m_rows = m.transa == CUBLAS_OP_N ? A.rows : A.cols;
  const uint64_t k = m.transa == CUBLAS_OP_N ? A.cols : A.rows;
  const uint64_t kb = m.transb == CUBLAS_OP_N ? B.rows : B.cols;
  const uint64_t n = m.transb == CUBLAS_OP_N ? B.cols : B.rows;
  if (k != kb || D.rows != m_rows || D.cols != n || C.rows != D.rows || C.cols != D.cols)
    return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

float load(const void* base, cudaDataType type, uint64_t index) {
  if (type == CUDA_R_32F) return static_cast<const float*>(base)[index];
  return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[index]);
}

// Column-major element (i, j) of op(X).
uint64_t at(const Layout& x, cublasOperation_t op, uint64_t i, uint64_t j) {
  return op == CUBLAS_OP_N ? i + j * uint64_t(x.ld) : j + i * uint64_t(x.ld);
}

}  // namespace
}  // namespace astrai::emu

using namespace astrai::emu;

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  *handle = new cublasLtContext;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* d, cublasComputeType_t compute, cudaDataType_t scale) {
  *d = new cublasLtMatmulDescOpaque_t{};
  write((*d)->data, MatmulDesc{compute, scale});
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
  delete d;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t bytes) {
  if (!d || !buf) return CUBLAS_STATUS_INVALID_VALUE;
  if (attr == CUBLASLT_MATMUL_DESC_TRANSA || attr == CUBLASLT_MATMUL_DESC_TRANSB) {
    if (bytes != sizeof(int32_t)) return CUBLAS_STATUS_INVALID_VALUE;
    int32_t op;
    std::memcpy(&op, buf, sizeof op);
    if (op != CUBLAS_OP_N && op != CUBLAS_OP_T) return CUBLAS_STATUS_NOT_SUPPORTED;
    MatmulDesc m = desc(d);
    (attr == CUBLASLT_MATMUL_DESC_TRANSA ? m.transa : m.transb) = cublasOperation_t(op);
    write(d->data, m);
    return CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_NOT_SUPPORTED;  // epilogues, pointer modes, ...: not used by AstrAI, not emulated
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* l, cudaDataType type, uint64_t rows, uint64_t cols,
                                          int64_t ld) {
  if (ld < int64_t(rows) || ld < 1) return CUBLAS_STATUS_INVALID_VALUE;  // column-major: ld >= rows
  *l = new cublasLtMatrixLayoutOpaque_t{};
  write((*l)->data, Layout{type, rows, cols, ld});
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
  delete l;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* p) {
  *p = new cublasLtMatmulPreferenceOpaque_t{};
  write((*p)->data, Preference{});
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
  delete p;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                                                    size_t bytes) {
  if (!p || !buf) return CUBLAS_STATUS_INVALID_VALUE;
  if (attr != CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (bytes != sizeof(uint64_t)) return CUBLAS_STATUS_INVALID_VALUE;
  Preference value;
  std::memcpy(&value.max_workspace, buf, bytes);
  write(p->data, value);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t op,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                              cublasLtMatmulPreference_t, int requested,
                                              cublasLtMatmulHeuristicResult_t results[], int* returned) {
  if (!handle || requested < 1 || !returned) return CUBLAS_STATUS_INVALID_VALUE;
  *returned = 0;
  const cublasStatus_t status = check(op, a, b, c, d);
  if (status == CUBLAS_STATUS_NOT_SUPPORTED) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  // One algorithm, no split-K and no workspace; or, under
  // heuristic_offers_only_split_k(), two that split K in 4 and 2 (what the
  // H200's heuristic returned for skinny shapes), reduced in place.
  const int offered = g_only_split_k ? std::min(requested, 2) : 1;
  for (int i = 0; i < offered; ++i) {
    results[i] = cublasLtMatmulHeuristicResult_t{};
    results[i].algo.data[0] = kAlgoMarker;
    results[i].algo.data[1] = layout(d).cols;  // the row count it was chosen for (see last_matmul_algorithm_rows)
    results[i].algo.data[2] = g_only_split_k ? uint64_t(4 >> i) : 0;
    results[i].algo.data[3] = g_only_split_k ? CUBLASLT_REDUCTION_SCHEME_INPLACE : CUBLASLT_REDUCTION_SCHEME_NONE;
    results[i].state = CUBLAS_STATUS_SUCCESS;
    results[i].wavesCount = 1.0f;
  }
  *returned = offered;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoCheck(cublasLtHandle_t handle, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a,
                                       cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                                       cublasLtMatrixLayout_t d, const cublasLtMatmulAlgo_t* algo,
                                       cublasLtMatmulHeuristicResult_t* result) {
  if (!handle || !algo || !result || algo->data[0] != kAlgoMarker) return CUBLAS_STATUS_INVALID_VALUE;
  const cublasStatus_t status = check(op, a, b, c, d);
  *result = cublasLtMatmulHeuristicResult_t{};
  result->algo = *algo;
  result->state = status;
  return status;
}

cublasStatus_t cublasLtMatmulAlgoConfigGetAttribute(const cublasLtMatmulAlgo_t* algo,
                                                    cublasLtMatmulAlgoConfigAttributes_t attr, void* buf,
                                                    size_t bytes, size_t* written) {
  if (!algo || algo->data[0] != kAlgoMarker) return CUBLAS_STATUS_INVALID_VALUE;
  if (attr != CUBLASLT_ALGO_CONFIG_SPLITK_NUM) return CUBLAS_STATUS_NOT_SUPPORTED;
  const int32_t splits = split_k_of(*algo);
  if (written) *written = sizeof splits;
  if (!buf || bytes != sizeof splits) return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(buf, &splits, sizeof splits);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoConfigSetAttribute(cublasLtMatmulAlgo_t* algo,
                                                    cublasLtMatmulAlgoConfigAttributes_t attr, const void* buf,
                                                    size_t bytes) {
  if (!algo || !buf || algo->data[0] != kAlgoMarker) return CUBLAS_STATUS_INVALID_VALUE;
  if (attr == CUBLASLT_ALGO_CONFIG_SPLITK_NUM) {
    int32_t splits = 0;
    if (bytes != sizeof splits) return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(&splits, buf, sizeof splits);
    if (splits < 1) return CUBLAS_STATUS_INVALID_VALUE;
    algo->data[2] = uint64_t(splits);
    return CUBLAS_STATUS_SUCCESS;
  }
  if (attr == CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME) {
    uint32_t scheme = 0;
    if (bytes != sizeof scheme) return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(&scheme, buf, sizeof scheme);
    algo->data[3] = scheme;
    return CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_NOT_SUPPORTED;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t op, const void* alpha, const void* A,
                              cublasLtMatrixLayout_t a, const void* B, cublasLtMatrixLayout_t b, const void* beta,
                              const void* C, cublasLtMatrixLayout_t c, void* D, cublasLtMatrixLayout_t d,
                              const cublasLtMatmulAlgo_t* algo, void*, size_t, cudaStream_t stream) {
  if (!handle || !alpha || !beta || !A || !B || !D || (algo && algo->data[0] != kAlgoMarker))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (const cublasStatus_t status = check(op, a, b, c, d); status != CUBLAS_STATUS_SUCCESS) return status;
  const MatmulDesc m = desc(op);
  const Layout la = layout(a), lb = layout(b), lc = layout(c), ld = layout(d);
  g_last_algorithm_rows = algo ? int64_t(algo->data[1]) : -1;
  g_last_split_k = algo ? split_k_of(*algo) : -1;
  float alpha_value, beta_value;
  std::memcpy(&alpha_value, alpha, sizeof alpha_value);  // host pointers (the default pointer mode)
  std::memcpy(&beta_value, beta, sizeof beta_value);
  enqueue_host_work(stream, [=] {
    const uint64_t k = m.transa == CUBLAS_OP_N ? la.cols : la.rows;
    for (uint64_t j = 0; j < ld.cols; ++j)
      for (uint64_t i = 0; i < ld.rows; ++i) {
        float sum = 0.0f;  // float32 accumulation, as CUBLAS_COMPUTE_32F
        for (uint64_t p = 0; p < k; ++p)
          sum += load(A, la.type, at(la, m.transa, i, p)) * load(B, lb.type, at(lb, m.transb, p, j));
        float out = alpha_value * sum;
        if (beta_value != 0.0f) out += beta_value * static_cast<const float*>(C)[i + j * uint64_t(lc.ld)];
        static_cast<float*>(D)[i + j * uint64_t(ld.ld)] = out;
      }
  });
  return CUBLAS_STATUS_SUCCESS;
}

namespace astrai::emu {
int64_t last_matmul_algorithm_rows() { return g_last_algorithm_rows.load(); }
int64_t last_matmul_split_k() { return g_last_split_k.load(); }
void heuristic_offers_only_split_k(bool on) { g_only_split_k = on; }
}  // namespace astrai::emu
