// The reference decode steps the performance report prices, as the kernel
// cases that make them up: the launch sequence of CudaExecutor's enqueue()
// (cuda/cuda_executor.cpp) for a Llama-3-8B-shaped model and a
// Qwen3-30B-A3B-shaped Mixture of Experts, then the device sampler. In bf16 a stacked projection (q/k/v, gate/up) is one GEMM; with
// quantized matrices it is one quantized mat-vec per matrix, as DeviceWeights
// stacks them and GemmRunner::run multiplies them (cuda/device_matrix.h).
// tests/cuda/test_perf_report.cpp checks the launches against the kernels a
// real decode step launches, in bf16 and in Q4_K_M.
#pragma once

#include <string>
#include <vector>

#include "cuda/kernel_cases/kernel_case.h"
#include "cuda/perf_model/weight_formats.h"

namespace astrai::cuda::perf {

struct ReferenceShape {
  std::string name;  // "8b-b1-c1k"
  int dim = 4096, n_heads = 32, n_kv_heads = 8, head_dim = 128, hidden = 14336, vocab = 128256, layers = 32;
  int batch = 1, context = 1024;  // decode rows, and the positions each row attends to (its own included)
  int max_seq_len = 8192;         // Llama 3's context: what the executor sizes its attention splits from
  Weights weights = Weights::BF16;  // the matrices' formats (weight_formats.h); quantized: 1-8 rows only
  bool qk_norm = false;             // Qwen 3's per-head q/k RMSNorm (fused into the RoPE kernel)
  bool rope_scaling = true;         // Llama 3.1's RoPE frequency scaling (Qwen 3 has none)
  // Mixture of Experts in every layer (0 experts: dense SwiGLU of `hidden`):
  // the router and the moe_ffn sequence (cuda/moe_ffn.h), bf16 only.
  int experts = 0, experts_used = 0, expert_hidden = 0;
  // Sliding windows (Gemma 3, gpt-oss): layer l attends to its last
  // `window` positions when sliding[l] (empty: every layer, when window > 0).
  int window = 0;
  std::vector<bool> sliding;
  bool gemma = false;      // Gemma 3's block: (1 + w) norms, sandwich norms, GeGLU, the √dim embedding
  float softcap = 0.0f;    // a final logit soft cap (0: none; Gemma 3 sets none)
  bool gpt_oss = false;    // gpt-oss: q/k/v and output biases, sinks, router and expert biases, clamped SwiGLU

  // The positions layer l's decode row reads: the context, or its window.
  int attended(int layer) const;
};

// The experts a decode step of `batch` rows reads in one sparse layer, in
// expectation, when each row's k experts are a uniformly random k-subset of
// E (a load-balanced router, which is what MoE training's auxiliary loss
// aims for): E (1 - (1 - k/E)^batch). Qwen3-30B-A3B (E 128, k 8): 8 at batch
// 1, 126.0 at batch 64. The report's moe_ffn launches draw their router
// scores uniformly, so their rows choose this way.
double expected_experts_read(int experts, int experts_used, int batch);

// Llama-3-8B in bf16 at batch 1 with 1k context and at batch 64 with 2k
// context; then at batch 1 with 1k context in Q4_K_M and in Q8_0; then
// Qwen3-30B-A3B in bf16 at batch 1 (1k context) and batch 64 (2k); then
// Gemma 3 12B and gpt-oss-20b in bf16 at batch 1 with 32k context (their
// sliding layers reading their windows only).
std::vector<ReferenceShape> reference_shapes();

struct StepKernel {
  std::string what;        // "layer: qkv projection"
  std::string case_name;   // a kernel case's name ("gemm")
  cases::KernelShape shape;
  int per_step = 1;        // launches of it in one decode step
  double ideal_bytes = 0;  // what this part of the step must move: weights, activations, KV cache read and write
};

// Every launch of one decode step in the executor's order, layer by layer,
// each once (per_step 1). Throws std::invalid_argument for quantized weights
// above kMatvecMaxRows rows (those take dequantize + cuBLASLt, not priced).
std::vector<StepKernel> decode_launches(const ReferenceShape& s);

// The same launches with equal ones (what, case, shape) counted together in
// per_step: what the report prices. A part first seen in a later layer (a
// Q4_K v projection after layer 0's Q6_K one) is listed after the part
// launched before it.
std::vector<StepKernel> decode_step(const ReferenceShape& s);

// What a decode step must read from HBM at the least: the model's weights
// (every matrix once in its format, the classifier, the norms and biases in
// bf16; a gather reads one embedding row, not counted; of a sparse layer's
// experts the expected_experts_read() ones) and the KV cache (bf16) each
// layer reads: the context, or a sliding layer's window.
struct StepBytes {
  double weights = 0, kv = 0;
  double kv_without_windows = 0;  // the KV bytes were every layer to read the whole context
  double total() const { return weights + kv; }
};
StepBytes step_floor_bytes(const ReferenceShape& s);

}  // namespace astrai::cuda::perf
