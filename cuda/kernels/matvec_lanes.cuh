// The block shape the mat-vec kernels share (matvec.cu on bf16/float32
// weights, matvec_quant.cu on quantized blocks): kLanes lanes per output,
// kOutputs outputs per block, and the fixed reduction of the lanes' sums
// that makes a row's bits independent of the rows beside it.
#pragma once

#include "cuda/kernels/dtype_device.cuh"

namespace astrai::cuda::matvec_lanes {

inline constexpr int kLanes = 16;   // lanes per output
inline constexpr int kOutputs = 8;  // outputs per block: a row's 8 results are one 32-byte store
inline constexpr int kThreads = kLanes * kOutputs;

// After every lane has stored its sums in partial[r][o][lane] and the block
// has passed a barrier: thread t < kRows * kOutputs adds row r's kLanes sums
// of output j0 + i by a fixed pairwise tree (lane q + lane q + 8, then + 4,
// + 2, + 1) and stores the result at y[r * ldy + j0 + i]; the kOutputs threads
// of a row store their consecutive outputs together.
template <int kRows>
__device__ __forceinline__ void store_row_sums(const float (&partial)[kRows][kOutputs][kLanes + 1], int j0, int out,
                                               float* __restrict__ y, int ldy) {
  const int r = int(threadIdx.x) / kOutputs, i = int(threadIdx.x) % kOutputs;
  if (r < kRows && j0 + i < out) {
    float v[kLanes];
#pragma unroll
    for (int q = 0; q < kLanes; ++q) v[q] = partial[r][i][q];
#pragma unroll
    for (int width = kLanes / 2; width > 0; width /= 2)
#pragma unroll
      for (int q = 0; q < width; ++q) v[q] = __fadd_rn(v[q], v[q + width]);
    y[size_t(r) * size_t(ldy) + size_t(j0 + i)] = v[0];
  }
}

}  // namespace astrai::cuda::matvec_lanes
