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

template <typename T, int kRows, bool kAligned>
__global__ void __launch_bounds__(kThreads) matvec_kernel(const T* __restrict__ x, const T* __restrict__ w, int in,
                                                          int out, float* __restrict__ y, int ldy) {
  constexpr int V = kVec<T>;
  // Each lane's sums; one padding column keeps the reads below off each other's banks.
  __shared__ float partial[kRows][kOutputs][kLanes + 1];
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
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        float xv[V];
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
      for (int r = 0; r < kRows; ++r) acc[r] = __fmaf_rn(to_float(x[size_t(r) * size_t(in) + size_t(k)]), wk, acc[r]);
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) partial[r][o][lane] = acc[r];
  }
  __syncthreads();
  matvec_lanes::store_row_sums<kRows>(partial, j0, out, y, ldy);
}

template <typename T, int kRows>
void launch_rows(const T* x, const T* w, int in, int out, float* y, int ldy, cudaStream_t stream) {
  const unsigned blocks = unsigned((out + kOutputs - 1) / kOutputs);
  // 16-byte loads need every row of x and W to start on 16 bytes.
  const bool aligned = in % kVec<T> == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(w) % 16 == 0;
  const auto matvec = aligned ? matvec_kernel<T, kRows, true> : matvec_kernel<T, kRows, false>;
  ASTRAI_LAUNCH(matvec, blocks, kThreads, 0, stream)(x, w, in, out, y, ldy);
}

template <typename T>
void launch_typed(const T* x, const T* w, int rows, int in, int out, float* y, int ldy, cudaStream_t stream) {
  switch (rows) {
    case 1: return launch_rows<T, 1>(x, w, in, out, y, ldy, stream);
    case 2: return launch_rows<T, 2>(x, w, in, out, y, ldy, stream);
    case 3: return launch_rows<T, 3>(x, w, in, out, y, ldy, stream);
    case 4: return launch_rows<T, 4>(x, w, in, out, y, ldy, stream);
    case 5: return launch_rows<T, 5>(x, w, in, out, y, ldy, stream);
    case 6: return launch_rows<T, 6>(x, w, in, out, y, ldy, stream);
    case 7: return launch_rows<T, 7>(x, w, in, out, y, ldy, stream);
    case 8: return launch_rows<T, 8>(x, w, in, out, y, ldy, stream);
  }
}

}  // namespace

void launch_matvec(const void* x, const void* w, DType dtype, int rows, int in, int out, float* y, int ldy,
                   cudaStream_t stream) {
  static_assert(kMatvecMaxRows == 8, "launch_typed has a case per row count");
  if (rows < 0 || rows > kMatvecMaxRows)
    throw std::invalid_argument("launch_matvec: " + std::to_string(rows) + " rows (1 to " +
                                std::to_string(kMatvecMaxRows) + ")");
  if (ldy < out) throw std::invalid_argument("launch_matvec: ldy below out");
  if (rows == 0 || out == 0) return;
  ASTRAI_DISPATCH_DTYPE(dtype, launch_typed(static_cast<const Elem*>(x), static_cast<const Elem*>(w), rows, in, out,
                                            y, ldy, stream));
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
