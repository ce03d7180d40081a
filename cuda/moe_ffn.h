// One sparse layer's feed-forward block on the device (the Mixture of
// Experts of reference/moe.h), as the executor and the kernel case launch it:
//
//   router GEMM      scores = h router^T                      [rows, experts]
//   moe_route        each row's k experts and weights          (reference route())
//   moe_plan         the rows * k choices sorted by expert, in tiles of <= 8
//                    (moe_route_plan: both in one launch up to 256 rows)
//   moe_gate_up_swiglu  gate/up of every chosen (row, expert), one grouped
//                    mat-vec, and silu(gate) * up in the same launch (a
//                    gate and an up stack in different formats: moe_matvec
//                    into float gate/up, then swiglu)
//   moe_matvec       down of every choice
//   (shared expert)  GEMMs + swiglu as a dense layer's, and its gate's GEMM
//   moe_combine      out[r] = sum_j w_rj expert_out(r, j) (+ sigmoid(g) shared)
//                    (moe_down_combine: the down product and this sum in one
//                    launch, up to kMoeDownCombineRows rows, the same bits)
//
// Every launch has a size the host knows (rows * k choices, the most tiles
// they can make), so a step replays from a CUDA graph whatever the routing;
// only the device knows which experts run, and the grouped mat-vec reads
// those experts' matrices only. Nothing depends on the batch: a row's
// experts, their outputs (launch_matvec's bits, kernels.h) and their sum in
// choice order are functions of the row alone.
#pragma once

#include <cuda_runtime_api.h>

#include "cuda/device_buffer.h"
#include "cuda/device_weights.h"
#include "cuda/dtype.h"
#include "cuda/gemm.h"
#include "cuda/kernels/kernels.h"
#include "reference/model_config.h"

namespace astrai::cuda {

// Device scratch of the block for up to capacity() rows.
class MoeWorkspace {
 public:
  MoeWorkspace() = default;
  MoeWorkspace(const ModelConfig& config, int rows, DType dtype);
  int capacity() const { return capacity_; }
  // NaN bytes over the float scratch, and -1 over the plan (tests: a value
  // some launch forgot to write shows).
  void poison(cudaStream_t stream) const;

  DeviceBuffer scores;        // [rows, experts] float
  DeviceBuffer expert;        // [rows * k] int: the chosen experts, best first
  DeviceBuffer weight;        // [rows * k] float: their weights
  DeviceBuffer plan_ints;     // MoePlan's arrays (plan())
  DeviceBuffer gate_up;       // [rows * k, 2 expert_hidden] float, in slot order
  DeviceBuffer hidden;        // [rows * k, expert_hidden] dtype, in slot order
  DeviceBuffer expert_out;    // [rows * k, dim] float, in slot order
  DeviceBuffer shared_gate;   // [rows] float (shared expert only)
  DeviceBuffer shared_gate_up;  // [rows, 2 shared_hidden] float
  DeviceBuffer shared_hidden;   // [rows, shared_hidden] dtype
  DeviceBuffer shared_out;      // [rows, dim] float

  MoePlan plan() const;

 private:
  int capacity_ = 0, choices_ = 0, max_tiles_ = 0;
};

// Fused: routing and its plan in one launch (up to 256 rows), the gate/up
// product and its SwiGLU in one (gate and up stacks in one format), and up
// to kMoeDownCombineRows rows the down product and the sum in one (a down
// stack in one part, k <= kMoeDownCombineMaxK); each falls back to Separate
// where it cannot. Separate: one launch a step (the
// kernel case's second variant, which checks the first's bits).
enum class MoePath { Fused, Separate };

// gpt-oss's per-expert biases, each [experts, its width] in the storage
// type, null where the model has none.
struct ExpertBiases {
  const void* gate = nullptr;    // [experts, expert_hidden]
  const void* up = nullptr;      // [experts, expert_hidden]
  const void* down = nullptr;    // [experts, dim]
  const void* router = nullptr;  // [experts]: added to each score as routing reads it
};

// From router scores on (the kernel case starts here): out [rows, dim] =
// the routed experts' weighted sum for rows of h [rows, dim] (dtype), plus
// sigmoid(shared_gate[r]) * shared_out[r] when those are given. With
// biases (and moe.swiglu_limit: the clamped SwiGLU), each choice's expert
// biases are added to its gate/up and down outputs before the activation and
// the weighted sum, as expert_linear() adds them: inside the fused gate/up
// and down kernels on the Fused path, by launch_add_bias on float rows on
// the Separate one (the same additions, so the same bits). With
// `accumulate` the sum is added to out (the residual) instead of stored.
void enqueue_routed_experts(const float* scores, const void* h, int rows, const MoeConfig& moe,
                            const DeviceExperts& gate_up, const DeviceExperts& down, DType dtype,
                            const MoeWorkspace& ws, const float* shared_out, const float* shared_gate, float* out,
                            cudaStream_t stream, MoePath path = MoePath::Fused, const ExpertBiases& biases = {},
                            bool accumulate = false);

// The whole block of sparse layer L for rows of h (dtype, [rows, dim]), into
// out [rows, dim] float (the feed-forward output the next residual adds).
// rows <= ws.capacity().                       (reference: moe_ffn() in reference/moe.cpp)
// With `fused` (the decode step's norms inside the mat-vecs, docs/cuda.md;
// only where gemm.fuses(L.router, rows)): the router's launch normalizes
// fused->norm_rows itself (where given) and stores the normalized rows at h
// (fused->store == h) for the launches after it, and with
// fused->accumulate the block's output is added to out instead of stored.
void enqueue_moe_ffn(GemmRunner& gemm, const DeviceLayerWeights& L, const ModelConfig& config, DType dtype,
                     const void* h, int rows, const MoeWorkspace& ws, float* out, cudaStream_t stream,
                     const MatvecFusion* fused = nullptr);

}  // namespace astrai::cuda
