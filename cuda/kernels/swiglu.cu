// SwiGLU activation. Reference: silu() and swiglu_ffn() in reference/swiglu.cpp:
//   hidden = silu(gate) * up,  silu(z) = z * (1 / (1 + exp(-z))),
// Gemma's GeGLU (gelu_tanh() and geglu_ffn() in reference/geglu.cpp) and
// gpt-oss's clamped SwiGLU (clamped_swiglu()): the same kernel with another
// activation (swiglu.cuh).
// gate and up come from one fused GEMM: row r is [gate (hidden) | up (hidden)].
//
// Elementwise, so the grid is (rows, blocks along the row): at one decode row
// the 14,336 elements of Llama-3-8B spread over 14 blocks, not one SM. Each
// thread takes 4 consecutive elements with 16-byte loads of gate and up (and
// a 16- or 8-byte store) when the row length allows (vector_access.cuh).
#include "cuda/cuda_check.h"
#include "cuda/kernels/dtype_device.cuh"
#include "cuda/kernels/kernels.h"
#include "cuda/kernels/swiglu.cuh"
#include "cuda/kernels/vector_access.cuh"

namespace astrai::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kPerBlock = kThreads * kVec4;  // elements of a row per block

template <GateActivation A>
__device__ __forceinline__ float gated(float gate, float up, float limit) {
  if constexpr (A == GateActivation::Silu) return swiglu(gate, up);
  else if constexpr (A == GateActivation::GeluTanh) return geglu(gate, up);
  else return clamped_swiglu(gate, up, limit);
}

template <typename T, bool kVector, GateActivation A>
__global__ void __launch_bounds__(kThreads) swiglu_kernel(const float* __restrict__ gate_up, int hidden, float limit,
                                                          T* __restrict__ out) {
  const size_t r = blockIdx.x;
  const float* gate = gate_up + r * 2 * size_t(hidden);
  const float* up = gate + hidden;
  T* o = out + r * size_t(hidden);
  const int i0 = int(blockIdx.y) * kPerBlock + int(threadIdx.x) * kVec4;
  if constexpr (kVector) {  // hidden % 4 == 0: i0 < hidden means all four are in the row
    if (i0 >= hidden) return;
    float g[4], u[4], h[4];
    load4(gate + i0, g);
    load4(up + i0, u);
    for (int e = 0; e < 4; ++e) h[e] = gated<A>(g[e], u[e], limit);
    store4(o + i0, h);
  } else {
    for (int i = i0; i < i0 + kVec4 && i < hidden; ++i) o[i] = from_float<T>(gated<A>(gate[i], up[i], limit));
  }
}

template <typename T, GateActivation A>
void launch_typed(const float* gate_up, int rows, int hidden, float limit, T* out, cudaStream_t stream) {
  const dim3 grid(unsigned(rows), unsigned((hidden + kPerBlock - 1) / kPerBlock));
  // gate rows start at 2 * hidden floats, up at hidden: both aligned when hidden % 4 == 0.
  const bool vector = vector_aligned<float>(gate_up, hidden) && vector_aligned<T>(out, hidden);
  const auto kernel = vector ? swiglu_kernel<T, true, A> : swiglu_kernel<T, false, A>;
  ASTRAI_LAUNCH(kernel, grid, kThreads, 0, stream)(gate_up, hidden, limit, out);
}

}  // namespace

void launch_swiglu(const float* gate_up, int rows, int hidden, void* out, DType dtype, cudaStream_t stream,
                   GateActivation activation, float limit) {
  if (rows == 0 || hidden == 0) return;
  switch (activation) {
    case GateActivation::Silu:
      ASTRAI_DISPATCH_DTYPE(dtype, (launch_typed<Elem, GateActivation::Silu>(gate_up, rows, hidden, limit,
                                                                           static_cast<Elem*>(out), stream)));
      break;
    case GateActivation::GeluTanh:
      ASTRAI_DISPATCH_DTYPE(dtype, (launch_typed<Elem, GateActivation::GeluTanh>(gate_up, rows, hidden, limit,
                                                                               static_cast<Elem*>(out), stream)));
      break;
    case GateActivation::ClampedSilu:
      ASTRAI_DISPATCH_DTYPE(dtype, (launch_typed<Elem, GateActivation::ClampedSilu>(gate_up, rows, hidden, limit,
                                                                                  static_cast<Elem*>(out), stream)));
      break;
  }
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
