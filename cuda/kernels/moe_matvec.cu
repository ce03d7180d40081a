// The experts' products: a grouped mat-vec over the tiles of moe_plan
// (moe_route.cu). Reference: linear_slice() in reference/linear.cpp,
//   y[s, j] = sum_i x[row(s), i] W_e[j, i]   for each slot s of expert e.
//
// A decode step's experts are mat-vecs: each chosen expert's matrix is read
// once for the few rows that chose it, and the experts nobody chose are
// never read. So this is matvec.cu's kernel (a warp per output streaming
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
// matvec_quant.cu's loop instead: lane l decodes items l, l + 32, ... of
// the expert's row in registers (quant_codec.cuh) and every row of the tile
// uses them; the bits are launch_matvec_quant's.
//
// A step of few rows takes moe_down_combine_kernel for the down product:
// the same products, each row's summed in the launch that makes them.
//
// Prefill makes many slots per expert and would rather have tensor cores
// (a grouped GEMM); this kernel reads each expert's matrix once per tile of
// 8 slots, which is right for decode and correct, if slow, for prefill.
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "cuda/cuda_check.h"
#include "cuda/kernels/dtype_device.cuh"
#include "cuda/kernels/kernels.h"
#include "cuda/kernels/matvec_lanes.cuh"
#include "cuda/kernels/moe_sum.cuh"
#include "cuda/kernels/quant_codec.cuh"
#include "cuda/kernels/swiglu.cuh"

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

// The experts' rows in the storage type: lane l streams 16-byte chunks l,
// l + 32, ... of the row (matvec.cu's loop), then the in % V tail one element
// per lane, adding to each of the tile's rows in turn.
template <typename T, bool kAligned>
struct DenseRows {
  const T* w;
  int in;
  __device__ __forceinline__ void dot(size_t row, const T* (&xr)[kRows], int lane, int rows,
                                      float (&acc)[kRows]) const {
    constexpr int V = kVec<T>;
    const T* wj = w + row * size_t(in);
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
  }
};

// The experts' rows in a quantized format (matvec_quant.cu's loop): lane l
// decodes items l, l + 32, ... of the row in registers (quant_codec.cuh).
template <typename T, QuantFormat F>
struct QuantRows {
  const uint8_t* w;
  int in;
  __device__ __forceinline__ void dot(size_t row, const T* (&xr)[kRows], int lane, int rows,
                                      float (&acc)[kRows]) const {
    using C = Codec<F>;
    const int blocks = in / C::kBlockElements;
    const uint8_t* wj = w + row * size_t(blocks) * size_t(C::kBlockBytes);
    for (int item = lane; item < blocks * C::kItems; item += kLanes) {
      const int b = item / C::kItems, sub = item % C::kItems;
      float wv[C::kElements];
      C::decode(wj + size_t(b) * size_t(C::kBlockBytes), sub, wv);
      const size_t k0 = size_t(b) * size_t(C::kBlockElements) + size_t(sub) * C::kElements;
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        if (r < rows) {
#pragma unroll
          for (int e = 0; e < C::kElements; ++e) acc[r] = __fmaf_rn(to_float(xr[r][k0 + size_t(e)]), wv[e], acc[r]);
        }
      }
    }
  }
};

template <typename T, typename Rows>
__global__ void __launch_bounds__(kThreads)
    moe_matvec_kernel(const T* __restrict__ x, const int* __restrict__ x_rows, Rows w, int out, MoePlan plan,
                      float* __restrict__ y, int ldy) {
  const int tile = int(blockIdx.x);
  if (tile >= plan.tiles[0]) return;  // the whole block: before any barrier
  const int expert = plan.tile_expert[tile], first = plan.tile_first[tile], rows = plan.tile_rows[tile];
  __shared__ float partial[kRows][kOutputs][kLanes + 1];
  const int o = int(threadIdx.x) / kLanes, lane = int(threadIdx.x) % kLanes;
  const int j0 = int(blockIdx.y) * kOutputs, j = j0 + o;
  if (j < out) {
    const T* xr[kRows];
    tile_inputs(x, x_rows, w.in, first, rows, xr);
    float acc[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) acc[r] = 0.0f;
    w.dot(size_t(expert) * size_t(out) + size_t(j), xr, lane, rows, acc);
#pragma unroll
    for (int r = 0; r < kRows; ++r) partial[r][o][lane] = acc[r];
  }
  __syncthreads();
  matvec_lanes::store_row_sums<kRows>(partial, j0, out, y + size_t(first) * size_t(ldy), ldy, rows);
}

// Gate and up of kUnits hidden units at once, then their SwiGLU (gpt-oss:
// the biases added first, as launch_add_bias adds them, and the clamped
// SwiGLU): the
// block's first kUnits warps take the gate rows, the next kUnits the up
// rows, every row by moe_matvec_kernel's lanes and chain; after the barrier,
// thread r * kUnits + i adds unit i's lanes of row r for both by the same
// tree and stores silu(gate) * up in the storage type. The bits are
// launch_moe_matvec's into gate_up, then launch_swiglu's. (kThreads
// threads, as the mat-vec's blocks: twice as many, at the ~73 registers of
// the 8-row accumulators, left one block an SM.)
constexpr int kUnits = kOutputs / 2;

template <typename T, typename Rows>
__global__ void __launch_bounds__(kThreads)
    moe_gate_up_swiglu_kernel(const T* __restrict__ x, const int* __restrict__ x_rows, Rows gate, Rows up,
                              int expert_rows, int hidden, MoePlan plan, const T* __restrict__ gate_bias,
                              const T* __restrict__ up_bias, float limit, T* __restrict__ out) {
  const int tile = int(blockIdx.x);
  if (tile >= plan.tiles[0]) return;  // the whole block: before any barrier
  const int expert = plan.tile_expert[tile], first = plan.tile_first[tile], rows = plan.tile_rows[tile];
  __shared__ float partial[kRows][2 * kUnits][kLanes + 1];
  const int o = int(threadIdx.x) / kLanes, lane = int(threadIdx.x) % kLanes;
  const int j0 = int(blockIdx.y) * kUnits, j = j0 + o % kUnits;
  if (j < hidden) {
    const T* xr[kRows];
    tile_inputs(x, x_rows, gate.in, first, rows, xr);
    float acc[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) acc[r] = 0.0f;
    const size_t row = size_t(expert) * size_t(expert_rows) + size_t(j);
    if (o < kUnits) gate.dot(row, xr, lane, rows, acc);
    else up.dot(row, xr, lane, rows, acc);
#pragma unroll
    for (int r = 0; r < kRows; ++r) partial[r][o][lane] = acc[r];
  }
  __syncthreads();
  const int r = int(threadIdx.x) / kUnits, i = int(threadIdx.x) % kUnits;
  if (r < rows && j0 + i < hidden) {
    float g = matvec_lanes::sum_lanes(partial[r][i]), u = matvec_lanes::sum_lanes(partial[r][kUnits + i]);
    const size_t b = size_t(expert) * size_t(hidden) + size_t(j0 + i);  // the expert's bias element (add_bias.cu's)
    if (gate_bias) g = __fadd_rn(g, to_float(gate_bias[b]));
    if (up_bias) u = __fadd_rn(u, to_float(up_bias[b]));
    out[size_t(first + r) * size_t(hidden) + size_t(j0 + i)] =
        from_float<T>(limit > 0.0f ? clamped_swiglu(g, u, limit) : swiglu(g, u));
  }
}

// The down product of a row's k choices and their weighted sum, for steps
// of few rows (kernels.h, launch_moe_down_combine). Warp o of block (b, r)
// takes output j = kOutputs b + o of each choice c in turn, by
// moe_matvec_kernel's lanes and chain on the choice's SwiGLU row, leaving
// the lanes' sums in partial[c][o]; after the barrier thread i < kOutputs
// adds choice c's lanes by the same tree (the slot's output, as the grouped
// launch stores it), adds its expert's bias as launch_add_bias does, and
// sums the choices in order as moe_combine_kernel does.
template <typename T, typename Rows>
__global__ void __launch_bounds__(kThreads)
    moe_down_combine_kernel(const T* __restrict__ hidden, Rows w, int dim, int k, const int* __restrict__ expert,
                            const float* __restrict__ weight, const int* __restrict__ slot_of,
                            const T* __restrict__ bias, const float* __restrict__ shared_out,
                            const float* __restrict__ shared_gate, float* __restrict__ out, bool accumulate) {
  // Dynamic shared memory sized by k (launch_down_combine_typed): the
  // lanes' sums [k][kOutputs][kLanes + 1], then the row's k experts, slots
  // and weights. (Static arrays sized for the largest k would be 17 KB in every
  // thread's TLS block of the emulated build, once per instance.)
  ASTRAI_DYNAMIC_SHARED(float, smem);
  auto* partial = reinterpret_cast<float (*)[kOutputs][kLanes + 1]>(smem);
  int* chosen = reinterpret_cast<int*>(smem + size_t(k) * kOutputs * (kLanes + 1));
  int* slot = chosen + k;
  float* chosen_weight = reinterpret_cast<float*>(slot + k);
  const int r = int(blockIdx.y), t = int(threadIdx.x);
  if (t < k) {
    chosen[t] = expert[r * k + t];
    slot[t] = slot_of[r * k + t];
    chosen_weight[t] = weight[r * k + t];
  }
  __syncthreads();
  const int o = t / kLanes, lane = t % kLanes;
  const int j0 = int(blockIdx.x) * kOutputs, j = j0 + o;
  if (j < dim) {
    for (int c = 0; c < k; ++c) {
      const T* xr[kRows];
#pragma unroll
      for (int q = 0; q < kRows; ++q) xr[q] = hidden + size_t(slot[c]) * size_t(w.in);
      float acc[kRows];
#pragma unroll
      for (int q = 0; q < kRows; ++q) acc[q] = 0.0f;
      w.dot(size_t(chosen[c]) * size_t(dim) + size_t(j), xr, lane, 1, acc);
      partial[c][o][lane] = acc[0];
    }
  }
  __syncthreads();
  if (t < kOutputs && j0 + t < dim) {
    const int d = j0 + t;
    float sum = 0.0f;
    for (int c = 0; c < k; ++c) {
      float y = matvec_lanes::sum_lanes(partial[c][t]);
      if (bias) y = __fadd_rn(y, to_float(bias[size_t(chosen[c]) * size_t(dim) + size_t(d)]));
      sum = moe_add_choice(sum, chosen_weight[c], y);
    }
    if (shared_out) sum = moe_add_shared_expert(sum, shared_gate[r], shared_out[size_t(r) * size_t(dim) + size_t(d)]);
    float& at = out[size_t(r) * size_t(dim) + size_t(d)];
    at = accumulate ? __fadd_rn(at, sum) : sum;  // the residual add (launch_moe_combine's)
  }
}

// Calls f(rows_of_gate, rows_of_up) with the Rows policy of `format` (both
// matrices in one format), for a kernel template's instance.
template <typename T, typename F>
void with_rows(std::optional<QuantFormat> format, bool aligned, const void* gate, const void* up, int in, F&& f) {
  const auto q = [&](auto format_tag) {
    using Rows = QuantRows<T, decltype(format_tag)::value>;
    f(Rows{static_cast<const uint8_t*>(gate), in}, Rows{static_cast<const uint8_t*>(up), in});
  };
  if (format) {
    switch (*format) {
      case QuantFormat::Q8_0: return q(std::integral_constant<QuantFormat, QuantFormat::Q8_0>{});
      case QuantFormat::Q4_0: return q(std::integral_constant<QuantFormat, QuantFormat::Q4_0>{});
      case QuantFormat::Q4_K: return q(std::integral_constant<QuantFormat, QuantFormat::Q4_K>{});
      case QuantFormat::Q5_K: return q(std::integral_constant<QuantFormat, QuantFormat::Q5_K>{});
      case QuantFormat::Q6_K: return q(std::integral_constant<QuantFormat, QuantFormat::Q6_K>{});
    }
  }
  if (aligned) f(DenseRows<T, true>{static_cast<const T*>(gate), in}, DenseRows<T, true>{static_cast<const T*>(up), in});
  else f(DenseRows<T, false>{static_cast<const T*>(gate), in}, DenseRows<T, false>{static_cast<const T*>(up), in});
}

// 16-byte loads need every row of x and of each matrix to start on 16 bytes.
template <typename T>
bool rows_aligned(const T* x, int in, std::initializer_list<const void*> matrices) {
  bool aligned = in % kVec<T> == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
  for (const void* w : matrices) aligned = aligned && reinterpret_cast<uintptr_t>(w) % 16 == 0;
  return aligned;
}

template <typename T>
void launch_typed(const T* x, const int* x_rows, const void* w, std::optional<QuantFormat> format, int in, int out,
                  const MoePlan& plan, int max_tiles, float* y, int ldy, cudaStream_t stream) {
  const dim3 grid(unsigned(max_tiles), unsigned((out + kOutputs - 1) / kOutputs));
  with_rows<T>(format, rows_aligned(x, in, {w}), w, w, in, [&](auto rows, auto) {
    const auto kernel = moe_matvec_kernel<T, decltype(rows)>;
    ASTRAI_LAUNCH(kernel, grid, kThreads, 0, stream)(x, x_rows, rows, out, plan, y, ldy);
  });
}

template <typename T>
void launch_gate_up_typed(const T* x, const int* x_rows, const MoeGateUp& w, int in, int hidden, const MoePlan& plan,
                          int max_tiles, T* out, cudaStream_t stream) {
  const dim3 grid(unsigned(max_tiles), unsigned((hidden + kUnits - 1) / kUnits));
  with_rows<T>(w.format, rows_aligned(x, in, {w.gate, w.up}), w.gate, w.up, in, [&](auto gate, auto up) {
    const auto kernel = moe_gate_up_swiglu_kernel<T, decltype(gate)>;
    ASTRAI_LAUNCH(kernel, grid, kThreads, 0, stream)(x, x_rows, gate, up, w.expert_rows, hidden, plan,
                                                     static_cast<const T*>(w.gate_bias),
                                                     static_cast<const T*>(w.up_bias), w.limit, out);
  });
}

template <typename T>
void launch_down_combine_typed(const T* hidden, const void* w, std::optional<QuantFormat> format, int in, int dim,
                               int rows, int k, const int* expert, const float* weight, const int* slot_of,
                               const T* bias, const float* shared_out, const float* shared_gate, float* out,
                               bool accumulate, cudaStream_t stream) {
  const dim3 grid(unsigned((dim + kOutputs - 1) / kOutputs), unsigned(rows));
  const size_t smem = (size_t(k) * kOutputs * (kLanes + 1) + 3 * size_t(k)) * sizeof(float);  // <= 17,088 B
  with_rows<T>(format, rows_aligned(hidden, in, {w}), w, w, in, [&](auto down, auto) {
    const auto kernel = moe_down_combine_kernel<T, decltype(down)>;
    ASTRAI_LAUNCH(kernel, grid, kThreads, smem, stream)(hidden, down, dim, k, expert, weight, slot_of, bias,
                                                        shared_out, shared_gate, out, accumulate);
  });
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

void launch_moe_gate_up_swiglu(const void* x, const int* x_rows, DType dtype, const MoeGateUp& w, int in, int hidden,
                               const MoePlan& plan, int max_tiles, void* out, cudaStream_t stream) {
  if ((hidden + kUnits - 1) / kUnits > 65535)
    throw std::invalid_argument("launch_moe_gate_up_swiglu: " + std::to_string(hidden) + " hidden units per expert");
  if (w.expert_rows < hidden) throw std::invalid_argument("launch_moe_gate_up_swiglu: expert_rows below hidden");
  if (w.format && in % quant_format_info(*w.format).block_elements != 0)
    throw std::invalid_argument("launch_moe_gate_up_swiglu: a row of " + std::to_string(in) + " weights is not whole " +
                                std::string(quant_format_info(*w.format).name) + " blocks");
  if (max_tiles == 0 || hidden == 0) return;
  ASTRAI_DISPATCH_DTYPE(dtype, launch_gate_up_typed(static_cast<const Elem*>(x), x_rows, w, in, hidden, plan,
                                                    max_tiles, static_cast<Elem*>(out), stream));
  ASTRAI_CUDA_CHECK_LAUNCH();
}

void launch_moe_down_combine(const void* hidden, DType dtype, const void* w, std::optional<QuantFormat> format, int in,
                             int dim, int rows, int k, const int* expert, const float* weight, const int* slot_of,
                             const void* bias, const float* shared_out, const float* shared_gate, float* out,
                             cudaStream_t stream, bool accumulate) {
  if (k < 1 || k > kMoeDownCombineMaxK)
    throw std::invalid_argument("launch_moe_down_combine: " + std::to_string(k) + " experts a row (1 to " +
                                std::to_string(kMoeDownCombineMaxK) + ")");
  if (rows > 65535) throw std::invalid_argument("launch_moe_down_combine: " + std::to_string(rows) + " rows");
  if (format && in % quant_format_info(*format).block_elements != 0)
    throw std::invalid_argument("launch_moe_down_combine: a row of " + std::to_string(in) + " weights is not whole " +
                                std::string(quant_format_info(*format).name) + " blocks");
  if (rows == 0 || dim == 0) return;
  ASTRAI_DISPATCH_DTYPE(dtype, launch_down_combine_typed(static_cast<const Elem*>(hidden), w, format, in, dim, rows, k,
                                                         expert, weight, slot_of, static_cast<const Elem*>(bias),
                                                         shared_out, shared_gate, out, accumulate, stream));
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
