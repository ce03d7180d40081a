// The Mixture-of-Experts sum's arithmetic, one place for every kernel that
// forms it (moe_combine.cu, and moe_matvec.cu's fused down + sum): each
// choice's weighted output rounded, then added in choice order, and the
// shared expert's sigmoid-gated output last, as moe_ffn() in
// reference/moe.cpp adds them. The kernels that call these give the same
// bits (the moe_ffn kernel case compares them bit for bit).
#pragma once

namespace astrai::cuda {

// sum + weight * expert_output, each step rounded (no fused multiply-add).
__device__ __forceinline__ float moe_add_choice(float sum, float weight, float expert_output) {
  return __fadd_rn(sum, __fmul_rn(weight, expert_output));
}

// sum + sigmoid(gate_logit) * shared_output, sigmoid() of reference/moe.cpp: 1 / (1 + exp(-z)).
__device__ __forceinline__ float moe_add_shared_expert(float sum, float gate_logit, float shared_output) {
  const float gate = __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-gate_logit)));
  return __fadd_rn(sum, __fmul_rn(gate, shared_output));
}

}  // namespace astrai::cuda
