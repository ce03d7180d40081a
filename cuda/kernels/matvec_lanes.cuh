// The block shape the mat-vec kernels share (matvec.cu on bf16/float32
// weights, matvec_quant.cu on quantized blocks, moe_matvec.cu on experts):
// kLanes lanes per output, kOutputs outputs per block, the 16-byte loads of
// bf16/float32 rows, and the fixed reduction of the lanes' sums that makes a
// row's bits independent of the rows beside it.
#pragma once

#include <cstdint>

#include "cuda/kernels/dtype_device.cuh"
#include "cuda/kernels/vector_pointer.cuh"

namespace astrai::cuda::matvec_lanes {

// A warp per output: at one decode row a narrow matrix (a 2048-output
// projection, a 128-expert router) has few outputs, and each warp's share
// of the row (its loads in flight) is what keeps HBM busy; 16 lanes gave
// Qwen3-30B-A3B's output projection 47% of its bytes' floor in the
// performance report and 32 give 78% (docs/cuda-performance.md).
inline constexpr int kLanes = 32;   // lanes per output
inline constexpr int kOutputs = 8;  // outputs per block: a row's 8 results are one 32-byte store
inline constexpr int kThreads = kLanes * kOutputs;

// 16 bytes of T: the elements one lane loads at once.
template <typename T>
constexpr int kVec = 16 / int(sizeof(T));

// v[0 .. kVec) = p[0 .. kVec) as float; one 16-byte load when kAligned.
template <bool kAligned>
__device__ __forceinline__ void load_chunk(const float* p, float (&v)[4]) {
  if constexpr (kAligned) {
    const float4 q = *ASTRAI_VECTOR_PTR(const float4, p);
    v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
  } else {
    for (int e = 0; e < 4; ++e) v[e] = p[e];
  }
}
template <bool kAligned>
__device__ __forceinline__ void load_chunk(const __nv_bfloat16* p, float (&v)[8]) {
  if constexpr (kAligned) {
    // Each 32-bit word holds elements 2i (low half, little-endian) and 2i + 1;
    // a bf16 is the top 16 bits of its float.
    const uint4 q = *ASTRAI_VECTOR_PTR(const uint4, p);
    const unsigned words[4] = {q.x, q.y, q.z, q.w};
    for (int i = 0; i < 4; ++i) {
      v[2 * i] = __int_as_float(int(words[i] << 16));
      v[2 * i + 1] = __int_as_float(int(words[i] & 0xffff0000u));
    }
  } else {
    for (int e = 0; e < 8; ++e) v[e] = to_float(p[e]);
  }
}

// The kLanes sums of one output added by the fixed pairwise tree (lane q +
// lane q + 16, then + 8, + 4, + 2, + 1): the one order every mat-vec uses.
__device__ __forceinline__ float sum_lanes(const float (&lanes)[kLanes + 1]) {
  float v[kLanes];
#pragma unroll
  for (int q = 0; q < kLanes; ++q) v[q] = lanes[q];
#pragma unroll
  for (int width = kLanes / 2; width > 0; width /= 2)
#pragma unroll
    for (int q = 0; q < width; ++q) v[q] = __fadd_rn(v[q], v[q + width]);
  return v[0];
}

// What a mat-vec does with a finished sum: stores it, or adds it to what y
// holds (the residual add of residual_rmsnorm.cu: y + (sum + bias[j])).
template <typename B = float>
struct RowSumEpilogue {
  bool accumulate = false;
  const B* bias = nullptr;  // with accumulate only; null: none
};

// After every lane has stored its sums in partial[r][o][lane] and the block
// has passed a barrier: thread t < rows * kOutputs (rows <= kRows) adds row
// r's kLanes sums of output j0 + i by sum_lanes and stores the result at
// y[r * ldy + j0 + i] (or adds it there, as `epilogue` says); the kOutputs
// threads of a row store their consecutive outputs together.
template <int kRows, typename B = float>
__device__ __forceinline__ void store_row_sums(const float (&partial)[kRows][kOutputs][kLanes + 1], int j0, int out,
                                               float* __restrict__ y, int ldy, int rows = kRows,
                                               RowSumEpilogue<B> epilogue = {}) {
  const int r = int(threadIdx.x) / kOutputs, i = int(threadIdx.x) % kOutputs;
  if (r >= kRows || r >= rows || j0 + i >= out) return;
  float sum = sum_lanes(partial[r][i]);
  float& at = y[size_t(r) * size_t(ldy) + size_t(j0 + i)];
  if (epilogue.accumulate) {
    if (epilogue.bias) sum = __fadd_rn(sum, to_float(epilogue.bias[j0 + i]));
    sum = __fadd_rn(at, sum);
  }
  at = sum;
}

}  // namespace astrai::cuda::matvec_lanes
