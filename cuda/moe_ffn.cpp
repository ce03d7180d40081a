// The sparse layer's launch sequence (cuda/moe_ffn.h).
#include "cuda/moe_ffn.h"

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/cuda_check.h"

namespace astrai::cuda {

MoeWorkspace::MoeWorkspace(const ModelConfig& c, int rows, DType dtype) : capacity_(rows) {
  const MoeConfig& m = c.moe;
  const size_t R = size_t(rows), E = size_t(m.n_experts), k = size_t(m.n_experts_used);
  const size_t eh = size_t(m.expert_hidden_dim), sh = size_t(m.shared_expert_hidden_dim), dim = size_t(c.dim);
  const size_t es = dtype_size(dtype);
  choices_ = int(R * k);
  max_tiles_ = moe_max_tiles(choices_, m.n_experts);
  const std::string text = " for " + std::to_string(rows) + " rows";
  scores = DeviceBuffer(R * E * 4, "router scores" + text);
  expert = DeviceBuffer(R * k * 4, "chosen experts" + text);
  weight = DeviceBuffer(R * k * 4, "expert weights" + text);
  plan_ints = DeviceBuffer((2 * size_t(choices_) + 3 * size_t(max_tiles_) + 1) * 4, "the expert plan" + text);
  gate_up = DeviceBuffer(R * k * 2 * eh * 4, "experts' gate/up activations" + text);
  hidden = DeviceBuffer(R * k * eh * es, "experts' SwiGLU outputs" + text);
  expert_out = DeviceBuffer(R * k * dim * 4, "experts' outputs" + text);
  if (c.options.shared_expert) {
    shared_gate = DeviceBuffer(R * 4, "shared expert gates" + text);
    shared_gate_up = DeviceBuffer(R * 2 * sh * 4, "shared expert gate/up activations" + text);
    shared_hidden = DeviceBuffer(R * sh * es, "shared expert SwiGLU outputs" + text);
    shared_out = DeviceBuffer(R * dim * 4, "shared expert outputs" + text);
  }
}

MoePlan MoeWorkspace::plan() const {
  int* p = plan_ints.as<int>();
  const size_t A = size_t(choices_), T = size_t(max_tiles_);
  return MoePlan{p, p + A, p + 2 * A, p + 2 * A + T, p + 2 * A + 2 * T, p + 2 * A + 3 * T};
}

void MoeWorkspace::poison(cudaStream_t stream) const {
  for (const DeviceBuffer* b : {&scores, &expert, &weight, &plan_ints, &gate_up, &hidden, &expert_out, &shared_gate,
                                &shared_gate_up, &shared_hidden, &shared_out})
    if (b->get() != nullptr) ASTRAI_CUDA_CHECK(cudaMemsetAsync(b->get(), 0xff, b->bytes(), stream));
}

namespace {

// The gate and up matrices of `gate_up` as one launch of
// launch_moe_gate_up_swiglu reads them, or nullopt where their formats differ.
std::optional<MoeGateUp> fused_gate_up(const DeviceExperts& gate_up, int hidden, DType dtype) {
  const std::vector<WeightPart>& parts = gate_up.parts;
  if (parts.size() == 1 && parts[0].rows == 2 * hidden) {  // expert e: its gate rows, then its up rows
    const WeightPart& p = parts[0];
    const size_t gate_bytes = p.quant ? quant_matrix_bytes(*p.quant, size_t(hidden), size_t(gate_up.cols))
                                      : size_t(hidden) * size_t(gate_up.cols) * dtype_size(dtype);
    const auto* base = static_cast<const char*>(p.data.get());
    return MoeGateUp{base, base + gate_bytes, 2 * hidden, p.quant};
  }
  if (parts.size() == 2 && parts[0].rows == hidden && parts[1].rows == hidden && parts[0].quant == parts[1].quant)
    return MoeGateUp{parts[0].data.get(), parts[1].data.get(), hidden, parts[0].quant};
  return std::nullopt;
}

}  // namespace

void enqueue_routed_experts(const float* scores, const void* h, int rows, const MoeConfig& moe,
                            const DeviceExperts& gate_up, const DeviceExperts& down, DType dtype,
                            const MoeWorkspace& ws, const float* shared_out, const float* shared_gate, float* out,
                            cudaStream_t stream, MoePath path, const ExpertBiases& biases, bool accumulate) {
  if (rows > ws.capacity())
    throw std::invalid_argument("enqueue_routed_experts: " + std::to_string(rows) + " rows for a workspace of " +
                                std::to_string(ws.capacity()));
  if (rows == 0) return;
  const int k = moe.n_experts_used, eh = moe.expert_hidden_dim, dim = down.rows();
  if (gate_up.rows() != 2 * eh || down.cols != eh)
    throw std::invalid_argument("enqueue_routed_experts: experts of " + std::to_string(gate_up.rows()) + " gate/up rows and " +
                                std::to_string(down.cols) + " down columns for an expert width of " + std::to_string(eh));
  const MoePlan plan = ws.plan();
  if (path == MoePath::Fused) {
    launch_moe_route_plan(scores, rows, moe.n_experts, k, moe.routing, moe.norm_topk_prob, ws.expert.as<int>(),
                          ws.weight.as<float>(), plan, stream, biases.router, dtype);
  } else {
    launch_moe_route(scores, rows, moe.n_experts, k, moe.routing, moe.norm_topk_prob, ws.expert.as<int>(),
                     ws.weight.as<float>(), stream, biases.router, dtype);
    launch_moe_plan(ws.expert.as<int>(), rows, k, moe.n_experts, plan, stream);
  }
  const int max_tiles = moe_max_tiles(rows * k, moe.n_experts);
  // Each part of a stack writes its columns of the slot's row (gate then up).
  const auto grouped = [&](const DeviceExperts& w, const void* x, const int* x_rows, float* y) {
    int col = 0;
    for (const WeightPart& p : w.parts) {
      launch_moe_matvec(x, x_rows, dtype, p.data.get(), p.quant, w.cols, p.rows, plan, max_tiles, y + col, w.rows(),
                        stream);
      col += p.rows;
    }
  };
  std::optional<MoeGateUp> fused = path == MoePath::Fused ? fused_gate_up(gate_up, eh, dtype) : std::nullopt;
  if (fused) {  // gpt-oss: the biases and the clamp in the same launch
    fused->gate_bias = biases.gate;
    fused->up_bias = biases.up;
    fused->limit = moe.swiglu_limit > 0.0f ? moe.swiglu_limit : 0.0f;
  }
  const int choices = rows * k;
  // Choice a's expert ws.expert[a], its row in the slot-ordered outputs plan.slot_of[a].
  const auto add_expert_bias = [&](float* y, int ldy, int width, const void* bias) {
    if (bias) launch_add_bias(y, ldy, plan.slot_of, choices, width, bias, ws.expert.as<int>(), dtype, stream);
  };
  if (fused) {
    launch_moe_gate_up_swiglu(h, plan.slot_row, dtype, *fused, gate_up.cols, eh, plan, max_tiles, ws.hidden.get(),
                              stream);
  } else {
    grouped(gate_up, h, plan.slot_row, ws.gate_up.as<float>());
    add_expert_bias(ws.gate_up.as<float>(), 2 * eh, eh, biases.gate);
    add_expert_bias(ws.gate_up.as<float>() + eh, 2 * eh, eh, biases.up);
    const bool clamped = moe.swiglu_limit > 0.0f;
    launch_swiglu(ws.gate_up.as<float>(), choices, eh, ws.hidden.get(), dtype, stream,
                  clamped ? GateActivation::ClampedSilu : GateActivation::Silu, moe.swiglu_limit);
  }
  if (path == MoePath::Fused && rows <= kMoeDownCombineRows && k <= kMoeDownCombineMaxK && down.parts.size() == 1) {
    const WeightPart& p = down.parts[0];
    launch_moe_down_combine(ws.hidden.get(), dtype, p.data.get(), p.quant, down.cols, dim, rows, k, ws.expert.as<int>(),
                            ws.weight.as<float>(), plan.slot_of, biases.down, shared_out, shared_gate, out, stream,
                            accumulate);
    return;
  }
  grouped(down, ws.hidden.get(), nullptr, ws.expert_out.as<float>());
  add_expert_bias(ws.expert_out.as<float>(), dim, dim, biases.down);
  launch_moe_combine(ws.expert_out.as<float>(), plan.slot_of, ws.weight.as<float>(), rows, k, dim, shared_out,
                     shared_gate, out, stream, accumulate);
}

void enqueue_moe_ffn(GemmRunner& gemm, const DeviceLayerWeights& L, const ModelConfig& c, DType dtype, const void* h,
                     int rows, const MoeWorkspace& ws, float* out, cudaStream_t stream, const MatvecFusion* fused) {
  // gpt-oss's router bias: added by routing
  if (fused && fused->norm_rows) {
    if (fused->store != h) throw std::invalid_argument("enqueue_moe_ffn: the router must store the normalized rows at h");
    MatvecFusion prologue = *fused;
    prologue.accumulate = false;  // the residual add is the sum's, at the end
    gemm.run(nullptr, L.router, dtype, rows, ws.scores.as<float>(), stream, prologue);
  } else {
    gemm.run(h, L.router, dtype, rows, ws.scores.as<float>(), stream);
  }
  const float *shared_out = nullptr, *shared_gate = nullptr;
  if (c.options.shared_expert) {  // a dense SwiGLU of its own, and its sigmoid gate's one output
    gemm.run(h, L.shexp_gate_up, dtype, rows, ws.shared_gate_up.as<float>(), stream);
    launch_swiglu(ws.shared_gate_up.as<float>(), rows, c.moe.shared_expert_hidden_dim, ws.shared_hidden.get(), dtype,
                  stream);
    gemm.run(ws.shared_hidden.get(), L.shexp_down, dtype, rows, ws.shared_out.as<float>(), stream);
    gemm.run(h, L.shexp_gate_inp, dtype, rows, ws.shared_gate.as<float>(), stream);
    shared_out = ws.shared_out.as<float>();
    shared_gate = ws.shared_gate.as<float>();
  }
  enqueue_routed_experts(ws.scores.as<float>(), h, rows, c.moe, L.exp_gate_up, L.exp_down, dtype, ws, shared_out,
                         shared_gate, out, stream, MoePath::Fused,
                         {L.exp_gate_bias.get(), L.exp_up_bias.get(), L.exp_down_bias.get(), L.router_bias.get()},
                         fused && fused->accumulate);
}

}  // namespace astrai::cuda
