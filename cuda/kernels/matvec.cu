// The skinny GEMM of a decode step: y = x W^T for 1 to kMatvecMaxRows rows,
// where cuBLASLt's smallest tiles would leave most of the GPU idle (at one
// row, qkv/wo/down launch 32-96 CTAs on 132 SMs). Reference: linear() in
// reference/linear.cpp,
//   y[r, j] = sum_k x[r, k] W[j, k],   x [rows, in], W [out, in], both `dtype`,
// float32 accumulation and float32 y [rows, out] (row-major, dense).
//
// The shape of llama.cpp's mul_mat_vec: the time is reading W once, so
//  - 32 lanes (a warp) per output j stream W's row j with 16-byte loads
//    (8 bf16 or 4 float a lane: 512 contiguous bytes, every sector used) and
//    hold the partial sums of all `rows` rows of x, so W is read once for the
//    whole batch; x (at most 8 x in elements) stays in L1/L2. At Llama's 4,096
//    outputs that is 131,072 threads, about 1,000 an SM, each with up to 4
//    16-byte loads in flight (kUnroll);
//  - the lanes' sums meet in shared memory and one thread per (row, output)
//    adds them by a fixed pairwise tree; a row's 8 consecutive outputs of a
//    block leave in one 32-byte store. (One barrier per block instead of a
//    warp-shuffle tree per row: about the same on a GPU, and on the emulated
//    device, where every shuffle is a fiber switch, 7x fewer switches.)
// When in is not a multiple of 16 bytes' worth of elements (or a pointer is
// not 16-byte aligned) the same loop reads element by element, and the last
// in % kVec elements are the tail, one per lane.
//
// Fused forms (MatvecFusion, kernels.h; the decode step's norms, docs/cuda.md
// "Norms inside the mat-vec"):
//  - a normalizing prologue: the input is RMSNorm of float32 rows, each
//    block first reducing every row's sum of squares (rms_row.cuh, the order
//    and expressions of residual_rmsnorm.cu) and then normalizing each chunk
//    of x as it reads it, rounded to T as the norm kernel rounds its output:
//    the products see the bits a separate norm launch would have written.
//    The row is read again by every block (from L2: 8-32 KB against the
//    block's 8 rows of W), which is what removes the launch;
//  - an accumulating epilogue: y += the sum (its bias added to the sum
//    first), the residual add of residual_rmsnorm.cu, each (row, output)
//    owned by one thread.
//
// Batch invariance within 1..kMatvecMaxRows: row r's sum is the same chain
// of fmaf's and the same tree whatever the number of rows, so its bits never
// depend on the rows around it (test_gemm checks this).
#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda/cuda_check.h"
#include "cuda/kernels/dtype_device.cuh"
#include "cuda/kernels/kernels.h"
#include "cuda/kernels/matvec_lanes.cuh"
#include "cuda/kernels/rms_row.cuh"
#include "cuda/kernels/vector_access.cuh"

namespace astrai::cuda {
namespace {

using matvec_lanes::kLanes;    // lanes per output: a load of W is 32 x 16 = 512 contiguous bytes
using matvec_lanes::kOutputs;
using matvec_lanes::kThreads;
using matvec_lanes::kVec;
using matvec_lanes::load_chunk;

// Loads in flight per lane: more for few rows (each 16-byte chunk of W brings
// kRows chunks of x with it, and their registers).
template <int kRows>
constexpr int kUnroll = kRows <= 2 ? 4 : kRows <= 4 ? 2 : 1;

// MatvecFusion, typed.
template <typename T>
struct Fusion {
  const float* norm_rows;  // null: no prologue, the input is x
  const T* scale;
  float offset, eps;
  bool vector_sum;  // the sum of squares 4 elements a thread at a time, as residual_rmsnorm.cu would take it
  T* store;         // null: the normalized rows are not stored
  bool accumulate;
  const T* bias;
};

// v = the normalized elements of x chunk xr[0 .. kVec<T>) (float32), with
// their scale chunk s, as T.
template <bool kAligned, typename T>
__device__ __forceinline__ void normalized_chunk(const float* xr, const float (&s)[kVec<T>], float inv_rms,
                                                 float (&v)[kVec<T>]) {
  constexpr int V = kVec<T>;
  if constexpr (kAligned) {
    for (int q = 0; q < V; q += 4) {
      float four[4];
      load4(xr + q, four);
      for (int e = 0; e < 4; ++e) v[q + e] = four[e];
    }
  } else {
    for (int e = 0; e < V; ++e) v[e] = xr[e];
  }
  for (int e = 0; e < V; ++e) v[e] = to_float(from_float<T>(rms_row::normalized(v[e], s[e], inv_rms)));
}

template <typename T, int kRows, bool kAligned, bool kNormed>
__global__ void __launch_bounds__(kThreads) matvec_kernel(const T* __restrict__ x, const T* __restrict__ w, int in,
                                                          int out, float* __restrict__ y, int ldy, Fusion<T> f) {
  constexpr int V = kVec<T>;
  // Each lane's sums; one padding column keeps the reads below off each other's banks.
  __shared__ float partial[kRows][kOutputs][kLanes + 1];
  [[maybe_unused]] float inv_rms[kRows];  // the prologue's, every row's, in every thread
  if constexpr (kNormed) {
    __shared__ float warp_sums[kThreads / 32];
    __shared__ float total;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const float* xr = f.norm_rows + size_t(r) * size_t(in);
      inv_rms[r] = f.vector_sum
                       ? rms_row::inv_rms<kThreads, true>(
                             in, f.eps, [&](int j0, float (&v)[4]) { load4(xr + j0, v); }, warp_sums, &total)
                       : rms_row::inv_rms<kThreads, false>(
                             in, f.eps, [&](int j0, float (&v)[4]) { v[0] = xr[j0]; }, warp_sums, &total);
    }
    if (f.store) {  // block b stores its slice of every normalized row
      const int per = (in + int(gridDim.x) - 1) / int(gridDim.x), k1 = min(in, (int(blockIdx.x) + 1) * per);
#pragma unroll
      for (int r = 0; r < kRows; ++r)
        for (int k = int(blockIdx.x) * per + int(threadIdx.x); k < k1; k += kThreads) {
          const size_t at = size_t(r) * size_t(in) + size_t(k);
          f.store[at] = from_float<T>(
              rms_row::normalized(f.norm_rows[at], rms_row::scale(to_float(f.scale[k]), f.offset), inv_rms[r]));
        }
    }
  }
  const int o = int(threadIdx.x) / kLanes, lane = int(threadIdx.x) % kLanes;
  const int j0 = int(blockIdx.x) * kOutputs, j = j0 + o;
  if (j < out) {
    const T* wj = w + size_t(j) * size_t(in);
    float acc[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) acc[r] = 0.0f;
    const int chunks = in / V;
    [[maybe_unused]] constexpr int unroll = kUnroll<kRows>;  // read by nvcc's pragma only
#pragma unroll unroll
    for (int c = lane; c < chunks; c += kLanes) {
      float wv[V];
      load_chunk<kAligned>(wj + size_t(c) * V, wv);
      [[maybe_unused]] float sv[V];  // the norm's scale over this chunk
      if constexpr (kNormed) {
        load_chunk<kAligned>(f.scale + size_t(c) * V, sv);
        for (int e = 0; e < V; ++e) sv[e] = rms_row::scale(sv[e], f.offset);
      }
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        float xv[V];
        if constexpr (kNormed)
          normalized_chunk<kAligned, T>(f.norm_rows + size_t(r) * size_t(in) + size_t(c) * V, sv, inv_rms[r], xv);
        else
          load_chunk<kAligned>(x + size_t(r) * size_t(in) + size_t(c) * V, xv);
#pragma unroll
        for (int e = 0; e < V; ++e) acc[r] = __fmaf_rn(xv[e], wv[e], acc[r]);
      }
    }
    // The tail: in % V (< kLanes) elements, one per lane.
    const int k = chunks * V + lane;
    if (k < in) {
      const float wk = to_float(wj[k]);
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const size_t at = size_t(r) * size_t(in) + size_t(k);
        float xk;
        if constexpr (kNormed)
          xk = to_float(from_float<T>(
              rms_row::normalized(f.norm_rows[at], rms_row::scale(to_float(f.scale[k]), f.offset), inv_rms[r])));
        else
          xk = to_float(x[at]);
        acc[r] = __fmaf_rn(xk, wk, acc[r]);
      }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) partial[r][o][lane] = acc[r];
  }
  __syncthreads();
  matvec_lanes::store_row_sums<kRows, T>(partial, j0, out, y, ldy, kRows, {f.accumulate, f.bias});
}

template <typename T, int kRows>
void launch_rows(const T* x, const T* w, int in, int out, float* y, int ldy, const Fusion<T>& f, cudaStream_t stream) {
  const unsigned blocks = unsigned((out + kOutputs - 1) / kOutputs);
  const auto on_16 = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  // 16-byte loads need every row of x (or of the normed rows and the scale) and W to start on 16 bytes.
  const bool aligned = in % kVec<T> == 0 && on_16(w) && (f.norm_rows ? on_16(f.norm_rows) && on_16(f.scale) : on_16(x));
  if (f.norm_rows) {
    const auto matvec = aligned ? matvec_kernel<T, kRows, true, true> : matvec_kernel<T, kRows, false, true>;
    ASTRAI_LAUNCH(matvec, blocks, kThreads, 0, stream)(x, w, in, out, y, ldy, f);
  } else {
    const auto matvec = aligned ? matvec_kernel<T, kRows, true, false> : matvec_kernel<T, kRows, false, false>;
    ASTRAI_LAUNCH(matvec, blocks, kThreads, 0, stream)(x, w, in, out, y, ldy, f);
  }
}

template <typename T>
void launch_typed(const T* x, const T* w, int rows, int in, int out, float* y, int ldy, const MatvecFusion& fusion,
                  cudaStream_t stream) {
  const auto* scale = static_cast<const T*>(fusion.norm.weight);
  // The separate norm kernel's choice for a row of `in` (its output, a scratch buffer, is aligned).
  const bool vector_sum = fusion.norm_rows && vector_aligned<float>(fusion.norm_rows, in) && vector_aligned<T>(scale, in);
  const Fusion<T> f{fusion.norm_rows,           scale,       fusion.norm.offset,
                    fusion.eps,                 vector_sum,  static_cast<T*>(fusion.store),
                    fusion.accumulate,          static_cast<const T*>(fusion.bias)};
  switch (rows) {
    case 1: return launch_rows<T, 1>(x, w, in, out, y, ldy, f, stream);
    case 2: return launch_rows<T, 2>(x, w, in, out, y, ldy, f, stream);
    case 3: return launch_rows<T, 3>(x, w, in, out, y, ldy, f, stream);
    case 4: return launch_rows<T, 4>(x, w, in, out, y, ldy, f, stream);
    case 5: return launch_rows<T, 5>(x, w, in, out, y, ldy, f, stream);
    case 6: return launch_rows<T, 6>(x, w, in, out, y, ldy, f, stream);
    case 7: return launch_rows<T, 7>(x, w, in, out, y, ldy, f, stream);
    case 8: return launch_rows<T, 8>(x, w, in, out, y, ldy, f, stream);
  }
}

}  // namespace

void launch_matvec(const void* x, const void* w, DType dtype, int rows, int in, int out, float* y, int ldy,
                   cudaStream_t stream, const MatvecFusion& fusion) {
  static_assert(kMatvecMaxRows == 8, "launch_typed has a case per row count");
  if (rows < 0 || rows > kMatvecMaxRows)
    throw std::invalid_argument("launch_matvec: " + std::to_string(rows) + " rows (1 to " +
                                std::to_string(kMatvecMaxRows) + ")");
  if (ldy < out) throw std::invalid_argument("launch_matvec: ldy below out");
  if (fusion.norm_rows && !fusion.norm.weight) throw std::invalid_argument("launch_matvec: a norm without its weight");
  if (rows == 0 || out == 0) return;
  ASTRAI_DISPATCH_DTYPE(dtype, launch_typed(static_cast<const Elem*>(x), static_cast<const Elem*>(w), rows, in, out,
                                            y, ldy, fusion, stream));
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
