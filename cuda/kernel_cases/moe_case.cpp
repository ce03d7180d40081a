// The Mixture-of-Experts case: cuda/moe_ffn.cpp's sequence from router
// scores on (route, plan, the grouped gate/up mat-vec, SwiGLU, the grouped
// down mat-vec, the weighted sum with a shared expert's gated output)
// against reference/moe.cpp's route() and the experts' SwiGLU through
// linear_slice(). The scores are the case's input, so both sides choose
// from the same floats: the chosen experts must be equal exactly (check()),
// and half the shapes round the scores to a few levels, so ties (the lower
// index first) are common. With gpt_oss 1 every expert has gate, up and down
// biases, the router a bias, and the activation is the clamped SwiGLU
// (limit 1, so it acts).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <set>
#include <span>
#include <stdexcept>
#include <string>

#include <xtensor/xtensor.hpp>

#include "cuda/cuda_check.h"
#include "cuda/kernel_cases/device_arrays.h"
#include "cuda/kernel_cases/kernel_case.h"
#include "cuda/moe_ffn.h"
#include "reference/linear.h"
#include "reference/moe.h"
#include "reference/swiglu.h"

namespace astrai::cuda::cases {
namespace {

struct MoeRun final : KernelRun {
  DType t;
  int rows, dim, hidden;
  MoeConfig moe;
  std::vector<float> scores, x, gate, up, down, shared_out, shared_gate;
  std::vector<float> residual;  // add=1: what the output is added to (empty: stored)  // gate/up [E, hidden, dim], down [E, dim, hidden]
  std::vector<float> gate_bias, up_bias, down_bias;  // gpt_oss: [E, hidden], [E, hidden], [E, dim]
  std::vector<float> router_bias;                     // gpt_oss: [E]
  bool host_copies = true;  // gate, up and down kept for the reference (small shapes)
  DeviceBuffer d_scores, d_x, d_shared_out, d_shared_gate, d_out, d_gate_bias, d_up_bias, d_down_bias, d_router_bias;
  DeviceExperts gate_up, experts_down;
  MoeWorkspace ws;

  explicit MoeRun(const KernelShape& s)
      : t(s.dtype), rows(s["rows"]), dim(s["dim"]), hidden(s["hidden"]) {
    moe.n_experts = s["experts"];
    moe.n_experts_used = s["k"];
    moe.expert_hidden_dim = hidden;
    moe.routing = s["routing"] == 2 ? ExpertRouting::TopKSoftmax : ExpertRouting::SoftmaxTopK;
    moe.norm_topk_prob = s["routing"] == 1;
    const bool gpt_oss = s.get("gpt_oss", 0) != 0;
    if (gpt_oss) moe.swiglu_limit = 1.0f;
    const size_t E = size_t(moe.n_experts), R = size_t(rows), D = size_t(dim), H = size_t(hidden);
    scores = test::random_values(R * E, s.seed, DType::Float32, 4.0f);
    if (s["ties"])  // a few levels: many equal scores in a row
      for (float& v : scores) v = std::round(v);
    x = test::random_values(R * D, s.seed + 1, t);
    const bool shared = s["shared"] != 0;
    if (shared) {
      shared_out = test::random_values(R * D, s.seed + 5, DType::Float32);
      shared_gate = test::random_values(R, s.seed + 6, DType::Float32, 3.0f);
    }
    d_scores = test::upload(scores, DType::Float32);
    d_x = test::upload(x, t);
    if (shared) {
      d_shared_out = test::upload(shared_out, DType::Float32);
      d_shared_gate = test::upload(shared_gate, DType::Float32);
    }
    // add=1: the sum is added to a residual (the decode step's fused norms), which launch() restores first.
    if (s.get("add", 0) != 0) residual = test::random_values(R * D, s.seed + 10, DType::Float32);
    d_out = residual.empty() ? test::nan_filled(R * D, DType::Float32) : test::upload(residual, DType::Float32);
    if (gpt_oss) {
      gate_bias = test::random_values(E * H, s.seed + 7, t);
      up_bias = test::random_values(E * H, s.seed + 8, t);
      down_bias = test::random_values(E * D, s.seed + 9, t);
      d_gate_bias = test::upload(gate_bias, t);
      d_up_bias = test::upload(up_bias, t);
      d_down_bias = test::upload(down_bias, t);
      router_bias = test::random_values(E, s.seed + 10, t);
      d_router_bias = test::upload(router_bias, t);
    }
    // The experts every row chose; only their matrices are ever read.
    std::set<int> chosen;
    for (size_t r = 0; r < R; ++r)
      for (int e : route_row(r).experts) chosen.insert(e);
    // Expert by expert: gate_up holds expert e's gate rows, then its up rows
    // (DeviceExperts). The tests' shapes keep host copies for the reference;
    // the report's (Qwen3-30B-A3B's 128 experts, 1.2 GB in bf16) fill and
    // upload only the chosen experts' matrices and keep nothing on the host.
    host_copies = E * H * D <= (size_t(1) << 22);
    const size_t es = dtype_size(t);
    gate_up.parts.push_back(WeightPart{DeviceBuffer(E * 2 * H * D * es, "experts' gate/up"), std::nullopt, 2 * hidden});
    gate_up.experts = moe.n_experts, gate_up.cols = dim;
    experts_down.parts.push_back(WeightPart{DeviceBuffer(E * D * H * es, "experts' down"), std::nullopt, dim});
    experts_down.experts = moe.n_experts, experts_down.cols = hidden;
    char* gu = static_cast<char*>(gate_up.parts[0].data.get());
    char* dn = static_cast<char*>(experts_down.parts[0].data.get());
    for (size_t e = 0; e < E; ++e) {
      if (!host_copies && !chosen.count(int(e))) continue;
      const uint64_t seed = uint64_t(s.seed) * 131 + 4 * e;
      const std::vector<float> g = test::random_values(H * D, seed + 2, t), u = test::random_values(H * D, seed + 3, t),
                               d = test::random_values(D * H, seed + 4, t);
      test::upload_to(gu + e * 2 * H * D * es, g, t);
      test::upload_to(gu + (e * 2 * H * D + H * D) * es, u, t);
      test::upload_to(dn + e * D * H * es, d, t);
      if (host_copies) {
        gate.insert(gate.end(), g.begin(), g.end());
        up.insert(up.end(), u.begin(), u.end());
        down.insert(down.end(), d.begin(), d.end());
      }
    }
    ModelConfig c;
    c.dim = dim;
    c.moe = moe;
    ws = MoeWorkspace(c, rows, t);
    ws.poison(nullptr);
    // Each chosen expert's three matrices once (the experts nobody chose are never read).
    const double A = double(R) * moe.n_experts_used;
    bytes = double(chosen.size()) * 3.0 * double(H * D) * double(es) + 4.0 * double(R * E) + double(R * D) * es +
            A * (2.0 * double(H) * 4.0 * 2 + double(H) * double(es) * 2 + double(D) * 4.0 * 2) + 4.0 * double(R * D);
    if (gpt_oss)  // each choice's biases read and its gate/up and down rows read and written once more
      bytes += A * ((2.0 * double(H) + double(D)) * double(es) + (2.0 * double(H) + double(D)) * 8.0);
    flops = A * 6.0 * double(H * D);
  }
  // Row r's routing as the reference computes it: route() of the router's
  // scores plus the router bias (gpt-oss: router_scores() of
  // reference/moe.cpp adds it in float before routing).
  ExpertChoice route_row(size_t r) const {
    const size_t E = size_t(moe.n_experts);
    std::vector<float> row(scores.begin() + std::ptrdiff_t(r * E), scores.begin() + std::ptrdiff_t((r + 1) * E));
    if (!router_bias.empty())
      for (size_t e = 0; e < E; ++e) row[e] += router_bias[e];
    return route(std::span<const float>(row), moe);
  }
  int launched = 0;  // the variant launch() last queued
  // v1: the executor's sequence (routing and plan in one launch, gate/up and
  // SwiGLU in one, down and the sum in one up to kMoeDownCombineRows rows);
  // v2: a launch a step (route, plan, the grouped gate/up mat-vec into
  // float, SwiGLU, the grouped down mat-vec, biases, the sum).
  void launch(int variant, cudaStream_t stream) override {
    if (variant != 1 && variant != 2) throw std::invalid_argument("moe_ffn has no variant " + std::to_string(variant));
    launched = variant;
    if (!residual.empty() && restore_inputs) test::upload_to(d_out.get(), residual, DType::Float32);
    enqueue_routed_experts(d_scores.as<float>(), d_x.get(), rows, moe, gate_up, experts_down, t, ws,
                           shared_out.empty() ? nullptr : d_shared_out.as<float>(),
                           shared_out.empty() ? nullptr : d_shared_gate.as<float>(), d_out.as<float>(), stream,
                           variant == 1 ? MoePath::Fused : MoePath::Separate,
                           {d_gate_bias.get(), d_up_bias.get(), d_down_bias.get(), d_router_bias.get()},
                           !residual.empty());
  }
  std::vector<float> result() override { return test::download(d_out, size_t(rows) * size_t(dim), DType::Float32); }
  std::vector<float> expected() override { return reference(nullptr, false); }
  // The reference's answer; with `bound`, per output element the most that
  // float32 sums in another order can move it (below), and with
  // `bf16_rounding` also the most that rounding the SwiGLU outputs to bf16
  // can: u = 2^-8 of each term of the down product, weighted as the experts
  // are summed.
  //
  // The order bound: a float32 sum of n terms in any order is within
  // (n - 1) 2^-24 of the sum of the terms' magnitudes of the exact sum, so
  // each gate and up output is within e_g = (D - 1) 2^-24 sum |x g| (and
  // e_u likewise) of the reference's; the SwiGLU moves that by at most
  // 1.1 |u| e_g + |silu(g)| e_u (silu's slope stays within 1.1; gpt-oss's
  // clamped form: 1.1 (|u| + 1) e_g + |glu| e_u), and the down product adds
  // its own order, (H - 1) 2^-24 sum |d h|. Doubled, for the second-order
  // terms. Without it a gate/up sum that cancels (a tiny SwiGLU output, and
  // so tiny outputs everywhere) fails a tolerance relative to the outputs
  // alone, as a shuffled thread order found (seed 13151363151927492081 of
  // cuda_kernels_shuffled: dim 31, hidden 1).
  std::vector<float> reference(std::vector<double>* bound, bool bf16_rounding) {
    if (!host_copies) throw std::logic_error("moe_ffn: the reference runs on the tests' small shapes only");
    const size_t E = size_t(moe.n_experts), D = size_t(dim), H = size_t(hidden);
    xt::xtensor<float, 3> g({E, H, D}), u({E, H, D}), d({E, D, H});
    std::copy(gate.begin(), gate.end(), g.begin());
    std::copy(up.begin(), up.end(), u.begin());
    std::copy(down.begin(), down.end(), d.begin());
    std::vector<float> out(size_t(rows) * D);
    if (bound) bound->assign(out.size(), 0.0);
    const double order_d = double(D - 1) * std::ldexp(1.0, -24), order_h = double(H - 1) * std::ldexp(1.0, -24);
    for (size_t r = 0; r < size_t(rows); ++r) {
      xt::xtensor<float, 2> xr({size_t(1), D});
      std::copy_n(x.begin() + std::ptrdiff_t(r * D), D, xr.begin());
      const ExpertChoice choice = route_row(r);
      xt::xtensor<float, 2> sum = xt::zeros<float>({size_t(1), D});
      for (size_t j = 0; j < choice.experts.size(); ++j) {
        const size_t e = size_t(choice.experts[j]);
        // expert_linear() of reference/moe.cpp: the product, then the expert's bias (gpt_oss)
        const auto biased = [&](xt::xtensor<float, 2> y, const std::vector<float>& b) {
          if (!b.empty())
            for (size_t i = 0; i < y.shape(1); ++i) y(0, i) += b[e * y.shape(1) + i];
          return y;
        };
        const xt::xtensor<float, 2> gv = biased(linear_slice(xr, g, e), gate_bias);
        const xt::xtensor<float, 2> uv = biased(linear_slice(xr, u, e), up_bias);
        const xt::xtensor<float, 2> hid =
            moe.swiglu_limit > 0.0f ? clamped_swiglu(gv, uv, moe.swiglu_limit) : xt::xtensor<float, 2>(silu(gv) * uv);
        sum += choice.weights[j] * biased(linear_slice(hid, d, e), down_bias);
        if (!bound) continue;
        std::vector<double> hid_error(H);  // how far each SwiGLU output may move with the gate/up sums' order
        for (size_t c = 0; c < H; ++c) {
          double g_terms = 0.0, u_terms = 0.0;
          for (size_t k = 0; k < D; ++k) {
            g_terms += std::fabs(double(xr(0, k)) * double(g(e, c, k)));
            u_terms += std::fabs(double(xr(0, k)) * double(u(e, c, k)));
          }
          // The SwiGLU's slopes: along the gate, 1.1 times the up factor; along up, the gate's activation.
          const bool clamped = moe.swiglu_limit > 0.0f;
          const double gate_in = clamped ? std::min(double(gv(0, c)), double(moe.swiglu_limit)) : double(gv(0, c));
          const double activation = gate_in / (1.0 + std::exp(-(clamped ? double(kClampedSwigluAlpha) : 1.0) * gate_in));
          const double gate_slope = 1.1 * (std::fabs(double(uv(0, c))) + (clamped ? 1.0 : 0.0));
          hid_error[c] = 2.0 * order_d * (gate_slope * g_terms + std::fabs(activation) * u_terms);
        }
        for (size_t i = 0; i < D; ++i)
          for (size_t c = 0; c < H; ++c) {
            const double term = std::fabs(double(choice.weights[j]) * double(d(e, i, c)));
            (*bound)[r * D + i] += term * (hid_error[c] + 2.0 * order_h * std::fabs(double(hid(0, c))));
            if (bf16_rounding) (*bound)[r * D + i] += std::ldexp(1.0, -8) * term * std::fabs(double(hid(0, c)));
          }
      }
      if (!shared_out.empty()) {
        const float z = shared_gate[r], s = 1.0f / (1.0f + std::exp(-z));
        for (size_t i = 0; i < D; ++i) sum(0, i) += s * shared_out[r * D + i];
      }
      if (!residual.empty())  // the residual add, in float as the device adds it
        for (size_t i = 0; i < D; ++i) sum(0, i) = residual[r * D + i] + sum(0, i);
      std::copy(sum.begin(), sum.end(), out.begin() + std::ptrdiff_t(r * D));
    }
    return out;
  }
  // The chosen experts exactly (they come from the same scores), then the
  // outputs within rtol; after v1, also v2's bits exactly (the fused
  // launches run each row's routing code, and each gate and up output's
  // chain and tree and the same SwiGLU, and up to kMoeDownCombineRows rows
  // each down output's chain and tree, its bias and the sum in choice order,
  // so all that follows is equal).
  std::string check(double rtol) override {
    if (launched == 1) {
      const std::vector<float> fused = result();
      launch(2, nullptr);
      ASTRAI_CUDA_CHECK(cudaDeviceSynchronize());
      const std::vector<float> separate = result();
      launched = 1;
      for (size_t i = 0; i < fused.size(); ++i)
        if (std::memcmp(&fused[i], &separate[i], sizeof(float)) != 0)
          return "element " + std::to_string(i) + ": " + std::to_string(fused[i]) + " with the fused launches, " +
                 std::to_string(separate[i]) + " with the separate launches (the bits must be equal)";
    }
    const size_t k = size_t(moe.n_experts_used);
    std::vector<int> got(size_t(rows) * k);
    ASTRAI_CUDA_CHECK(cudaMemcpy(got.data(), ws.expert.get(), got.size() * 4, cudaMemcpyDeviceToHost));
    for (size_t r = 0; r < size_t(rows); ++r) {
      const ExpertChoice want = route_row(r);
      for (size_t j = 0; j < k; ++j)
        if (got[r * k + j] != want.experts[j])
          return "row " + std::to_string(r) + " choice " + std::to_string(j) + ": expert " +
                 std::to_string(got[r * k + j]) + " where the reference routes to " + std::to_string(want.experts[j]);
    }
    // rtol (float32 sums in another order) relative to each element and the
    // mean, as compare(); in bf16 also the rounding bound of the SwiGLU
    // outputs, which the device stores in bf16 and the reference keeps in
    // float32 (a tolerance relative to the outputs alone fails where the
    // down product's terms cancel).
    std::vector<double> bound;
    const std::vector<float> want = reference(&bound, t == DType::BFloat16), have = result();
    double mean = 0.0;
    for (const float v : want) mean += std::fabs(double(v)) / double(want.size());
    for (size_t i = 0; i < have.size(); ++i) {
      const double allowed = rtol * (std::fabs(double(want[i])) + mean) + bound[i];
      if (!(std::fabs(double(have[i]) - double(want[i])) <= allowed))
        return "element " + std::to_string(i) + ": actual " + std::to_string(have[i]) + ", expected " +
               std::to_string(want[i]) + " (allowed error " + std::to_string(allowed) + ")";
    }
    return "";
  }
};

KernelShape moe_shape(int rows, int experts, int k, int hidden, int dim) {
  return {DType::BFloat16, 1,
          {{"rows", rows}, {"experts", experts}, {"k", k}, {"hidden", hidden}, {"dim", dim}, {"routing", 1},
           {"ties", 0}, {"shared", 0}, {"gpt_oss", 0}}};
}

}  // namespace

KernelCase moe_case() {
  return {"moe_ffn", "cuda/kernels/moe_route.cu, moe_matvec.cu, moe_combine.cu (cuda/moe_ffn.cpp)",
          "route() and the experts' SwiGLU (linear_slice; gpt-oss's biases and clamp) of reference/moe.cpp", 2,
          {1e-5, 1e-5,
           "the same inputs and float32 sums in another order; in bf16 the device also rounds the SwiGLU outputs "
           "to the storage type before the down product (as for a dense layer), which check() bounds by 2^-8 of "
           "each term of that product"},
          [](const Pick& pick) {
            const int experts = pick(1, 12);
            // hidden and dim ragged (the tail) or multiples of 8 (16-byte loads); rows past a tile of 8 per expert.
            const int hidden = pick(0, 1) ? 8 * pick(1, 6) : pick(1, 40);
            const int dim = pick(0, 1) ? 8 * pick(1, 8) : pick(1, 70);
            return KernelShape{pick(0, 1) ? DType::BFloat16 : DType::Float32, pick_seed(pick),
                               {{"rows", pick(0, 1) ? pick(1, kMoeDownCombineRows + 1) : pick(1, 24)}, {"experts", experts}, {"k", pick(1, experts)},
                                {"hidden", hidden}, {"dim", dim}, {"routing", pick(0, 2)}, {"ties", pick(0, 1)},
                                {"shared", pick(0, 1)}, {"gpt_oss", pick(0, 1)}, {"add", pick(0, 1)}}};
          },
          // Qwen3-30B-A3B's sparse layer (128 experts of 768, top 8, dim 2048) at a decode step of 1 and 64 rows.
          {moe_shape(1, 128, 8, 768, 2048), moe_shape(64, 128, 8, 768, 2048)},
          [](const KernelShape& s) { return std::make_unique<MoeRun>(s); }};
}

}  // namespace astrai::cuda::cases
