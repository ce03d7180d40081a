// The experts' products: a grouped mat-vec over the tiles of moe_plan
// (moe_route.cu). Reference: linear_slice() in reference/linear.cpp,
//   y[s, j] = sum_i x[row(s), i] W_e[j, i]   for each slot s of expert e.
//
// A decode step's experts are mat-vecs: each chosen expert's matrix is read
// once for the few rows that chose it, and the experts nobody chose are
// never read. So this is matvec.cu's kernel (16 lanes per output streaming
// W's row with 16-byte loads, the lanes' sums added by the same fixed tree)
// with the rows and the matrix taken from a tile: blockIdx.x is the tile
// (up to kMoeTileRows slots of one expert), blockIdx.y the block of kOutputs
// outputs. The grid is sized on the host for the most tiles a step can have
// (moe_max_tiles), since only the device knows how many there are: blocks
// past the plan's count return at once, so a graph replays the step
// whatever the routing.
//
// A slot's row runs the chain of fmaf's and the tree matvec_kernel gives
// it, whatever else is in its tile (the unused rows of a partial tile are
// skipped, never summed), so its bits are launch_matvec's on its row and its
// expert's matrix: the expert outputs of a row do not depend on the batch.
//
// Experts kept in a quantized format (a GGUF file's Q4_K_M stacks) take
// matvec_quant.cu's loop instead: lane l decodes items l, l + 16, ... of
// the expert's row in registers (quant_codec.cuh) and every row of the tile
// uses them; the bits are launch_matvec_quant's.
//
// Prefill makes many slots per expert and would rather have tensor cores
// (a grouped GEMM); this kernel reads each expert's matrix once per tile of
// 8 slots, which is right for decode and correct, if slow, for prefill.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda/cuda_check.h"
#include "cuda/kernels/dtype_device.cuh"
#include "cuda/kernels/kernels.h"
#include "cuda/kernels/matvec_lanes.cuh"
#include "cuda/kernels/quant_codec.cuh"

namespace astrai::cuda {
namespace {

using matvec_lanes::kLanes;
using matvec_lanes::kOutputs;
using matvec_lanes::kThreads;
using matvec_lanes::kVec;
using matvec_lanes::load_chunk;

constexpr int kRows = kMoeTileRows;

// The input rows of a tile's slots: slot first + r reads x's row
// x_rows[first + r] (the slot's own row when x_rows is null). Rows past
// `rows` (a partial tile) point at a used one and are never read.
template <typename T>
__device__ void tile_inputs(const T* x, const int* x_rows, int in, int first, int rows, const T* (&xr)[kRows]) {
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int s = first + (r < rows ? r : 0);
    xr[r] = x + size_t(x_rows ? x_rows[s] : s) * size_t(in);
  }
}

template <typename T, bool kAligned>
__global__ void __launch_bounds__(kThreads)
    moe_matvec_kernel(const T* __restrict__ x, const int* __restrict__ x_rows, const T* __restrict__ w, int in,
                      int out, MoePlan plan, float* __restrict__ y, int ldy) {
  constexpr int V = kVec<T>;
  const int tile = int(blockIdx.x);
  if (tile >= plan.tiles[0]) return;  // the whole block: before any barrier
  const int expert = plan.tile_expert[tile], first = plan.tile_first[tile], rows = plan.tile_rows[tile];
  __shared__ float partial[kRows][kOutputs][kLanes + 1];
  const int o = int(threadIdx.x) / kLanes, lane = int(threadIdx.x) % kLanes;
  const int j0 = int(blockIdx.y) * kOutputs, j = j0 + o;
  if (j < out) {
    const T* wj = w + (size_t(expert) * size_t(out) + size_t(j)) * size_t(in);
    const T* xr[kRows];
    tile_inputs(x, x_rows, in, first, rows, xr);
    float acc[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) acc[r] = 0.0f;
    const int chunks = in / V;
    for (int c = lane; c < chunks; c += kLanes) {
      float wv[V];
      load_chunk<kAligned>(wj + size_t(c) * V, wv);
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        if (r < rows) {  // the tile's rows only (a partial tile skips the rest)
          float xv[V];
          load_chunk<kAligned>(xr[r] + size_t(c) * V, xv);
#pragma unroll
          for (int e = 0; e < V; ++e) acc[r] = __fmaf_rn(xv[e], wv[e], acc[r]);
        }
      }
    }
    // The tail: in % V (< kLanes) elements, one per lane.
    const int k = chunks * V + lane;
    if (k < in) {
      const float wk = to_float(wj[k]);
#pragma unroll
      for (int r = 0; r < kRows; ++r)
        if (r < rows) acc[r] = __fmaf_rn(to_float(xr[r][k]), wk, acc[r]);
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) partial[r][o][lane] = acc[r];
  }
  __syncthreads();
  matvec_lanes::store_row_sums<kRows>(partial, j0, out, y + size_t(first) * size_t(ldy), ldy, rows);
}

template <typename T, QuantFormat F>
__global__ void __launch_bounds__(kThreads)
    moe_matvec_quant_kernel(const T* __restrict__ x, const int* __restrict__ x_rows, const uint8_t* __restrict__ w,
                            int in, int out, MoePlan plan, float* __restrict__ y, int ldy) {
  using C = Codec<F>;
  const int tile = int(blockIdx.x);
  if (tile >= plan.tiles[0]) return;  // the whole block: before any barrier
  const int expert = plan.tile_expert[tile], first = plan.tile_first[tile], rows = plan.tile_rows[tile];
  __shared__ float partial[kRows][kOutputs][kLanes + 1];
  const int o = int(threadIdx.x) / kLanes, lane = int(threadIdx.x) % kLanes;
  const int j0 = int(blockIdx.y) * kOutputs, j = j0 + o;
  if (j < out) {
    const int blocks = in / C::kBlockElements;
    const uint8_t* row = w + (size_t(expert) * size_t(out) + size_t(j)) * size_t(blocks) * size_t(C::kBlockBytes);
    const T* xr[kRows];
    tile_inputs(x, x_rows, in, first, rows, xr);
    float acc[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) acc[r] = 0.0f;
    for (int item = lane; item < blocks * C::kItems; item += kLanes) {
      const int b = item / C::kItems, sub = item % C::kItems;
      float wv[C::kElements];
      C::decode(row + size_t(b) * size_t(C::kBlockBytes), sub, wv);
      const size_t k0 = size_t(b) * size_t(C::kBlockElements) + size_t(sub) * C::kElements;
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        if (r < rows) {
#pragma unroll
          for (int e = 0; e < C::kElements; ++e) acc[r] = __fmaf_rn(to_float(xr[r][k0 + size_t(e)]), wv[e], acc[r]);
        }
      }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) partial[r][o][lane] = acc[r];
  }
  __syncthreads();
  matvec_lanes::store_row_sums<kRows>(partial, j0, out, y + size_t(first) * size_t(ldy), ldy, rows);
}

template <typename T>
void launch_typed(const T* x, const int* x_rows, const void* w, std::optional<QuantFormat> format, int in, int out,
                  const MoePlan& plan, int max_tiles, float* y, int ldy, cudaStream_t stream) {
  const dim3 grid(unsigned(max_tiles), unsigned((out + kOutputs - 1) / kOutputs));
  const auto* q = static_cast<const uint8_t*>(w);
  if (format) {
    const auto launch_quant = [&](auto moe_matvec_quant) {
      ASTRAI_LAUNCH(moe_matvec_quant, grid, kThreads, 0, stream)(x, x_rows, q, in, out, plan, y, ldy);
    };
    switch (*format) {
      case QuantFormat::Q8_0: return launch_quant(moe_matvec_quant_kernel<T, QuantFormat::Q8_0>);
      case QuantFormat::Q4_0: return launch_quant(moe_matvec_quant_kernel<T, QuantFormat::Q4_0>);
      case QuantFormat::Q4_K: return launch_quant(moe_matvec_quant_kernel<T, QuantFormat::Q4_K>);
      case QuantFormat::Q5_K: return launch_quant(moe_matvec_quant_kernel<T, QuantFormat::Q5_K>);
      case QuantFormat::Q6_K: return launch_quant(moe_matvec_quant_kernel<T, QuantFormat::Q6_K>);
    }
  }
  const T* wt = static_cast<const T*>(w);
  // 16-byte loads need every row of x and of each expert's W to start on 16 bytes.
  const bool aligned = in % kVec<T> == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(w) % 16 == 0;
  const auto kernel = aligned ? moe_matvec_kernel<T, true> : moe_matvec_kernel<T, false>;
  ASTRAI_LAUNCH(kernel, grid, kThreads, 0, stream)(x, x_rows, wt, in, out, plan, y, ldy);
}

}  // namespace

void launch_moe_matvec(const void* x, const int* x_rows, DType dtype, const void* w, std::optional<QuantFormat> format,
                       int in, int out, const MoePlan& plan, int max_tiles, float* y, int ldy, cudaStream_t stream) {
  if ((out + kOutputs - 1) / kOutputs > 65535)
    throw std::invalid_argument("launch_moe_matvec: " + std::to_string(out) + " outputs per expert");
  if (ldy < out) throw std::invalid_argument("launch_moe_matvec: ldy below out");
  if (format && in % quant_format_info(*format).block_elements != 0)
    throw std::invalid_argument("launch_moe_matvec: a row of " + std::to_string(in) + " weights is not whole " +
                                std::string(quant_format_info(*format).name) + " blocks");
  if (max_tiles == 0 || out == 0) return;
  ASTRAI_DISPATCH_DTYPE(dtype, launch_typed(static_cast<const Elem*>(x), x_rows, w, format, in, out, plan, max_tiles,
                                            y, ldy, stream));
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
