// SwiGLU activation. Reference: silu() and swiglu_ffn() in reference/swiglu.cpp:
//   hidden = silu(gate) * up,  silu(z) = z * (1 / (1 + exp(-z))).
// gate and up come from one fused GEMM: row r is [gate (hidden) | up (hidden)].
#include "cuda/cuda_check.h"
#include "cuda/kernels/dtype_device.cuh"
#include "cuda/kernels/kernels.h"

namespace astrai::cuda {
namespace {

template <typename T>
__global__ void swiglu_kernel(const float* __restrict__ gate_up, int hidden, T* __restrict__ out) {
  const size_t r = blockIdx.x;
  const float* gate = gate_up + r * 2 * size_t(hidden);
  const float* up = gate + hidden;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
    const float z = gate[i];
    // Explicitly rounded operations: the same operation order as the reference.
    const float sigmoid = __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-z)));
    out[r * size_t(hidden) + size_t(i)] = from_float<T>(__fmul_rn(__fmul_rn(z, sigmoid), up[i]));
  }
}

}  // namespace

void launch_swiglu(const float* gate_up, int rows, int hidden, void* out, DType dtype, cudaStream_t stream) {
  if (rows == 0) return;
  ASTRAI_DISPATCH_DTYPE(dtype, ASTRAI_LAUNCH(swiglu_kernel<Elem>, rows, 256, 0, stream)(gate_up, hidden,
                                                                                static_cast<Elem*>(out)));
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
