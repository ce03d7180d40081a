// The gated activations of one element, shared by swiglu.cu and the
// experts' fused gate/up product (moe_matvec.cu), so both give the same bits.
// Reference: silu() in reference/swiglu.cpp, silu(z) = z * (1 / (1 + exp(-z)));
// gelu_tanh() in reference/geglu.cpp.
#pragma once

namespace astrai::cuda {

__device__ __forceinline__ float swiglu(float z, float up) {
  // Explicitly rounded operations: the same operation order as the reference.
  const float sigmoid = __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-z)));
  return __fmul_rn(__fmul_rn(z, sigmoid), up);
}

// Gemma's GeGLU: 0.5 z (1 + tanh(sqrt(2 / pi) (z + 0.044715 z^3))) * up,
// each operation rounded in the reference's order.
__device__ __forceinline__ float geglu(float z, float up) {
  constexpr float k = 0.7978845608028654f;  // sqrt(2 / pi) rounded to float, as reference/geglu.cpp's
  const float cube = __fmul_rn(__fmul_rn(__fmul_rn(0.044715f, z), z), z);
  const float t = tanhf(__fmul_rn(k, __fadd_rn(z, cube)));
  return __fmul_rn(__fmul_rn(__fmul_rn(0.5f, z), __fadd_rn(1.0f, t)), up);
}

// gpt-oss's clamped SwiGLU (clamped_swiglu() in reference/swiglu.cpp):
// g = min(gate, limit), u = clamp(up, -limit, limit),
// (u + 1) * (g * (1 / (1 + exp(-alpha g)))), alpha = 1.702.
__device__ __forceinline__ float clamped_swiglu(float gate, float up, float limit) {
  constexpr float alpha = 1.702f;  // kClampedSwigluAlpha of reference/swiglu.h
  // std::min and std::clamp's comparisons, so a NaN stays NaN (fminf would drop it).
  const float g = limit < gate ? limit : gate;
  const float u = up < -limit ? -limit : (limit < up ? limit : up);
  const float sigmoid = __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-__fmul_rn(alpha, g))));
  return __fmul_rn(__fadd_rn(u, 1.0f), __fmul_rn(g, sigmoid));
}

}  // namespace astrai::cuda
