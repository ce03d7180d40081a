// The SwiGLU of one element, shared by swiglu.cu and the experts' fused
// gate/up product (moe_matvec.cu), so both give the same bits.
// Reference: silu() in reference/swiglu.cpp, silu(z) = z * (1 / (1 + exp(-z))).
#pragma once

namespace astrai::cuda {

__device__ __forceinline__ float swiglu(float z, float up) {
  // Explicitly rounded operations: the same operation order as the reference.
  const float sigmoid = __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-z)));
  return __fmul_rn(__fmul_rn(z, sigmoid), up);
}

}  // namespace astrai::cuda
