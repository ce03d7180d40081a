// The mat-vec's fused forms (MatvecFusion, kernels.h): the residual norm
// folded into the product after it (the prologue, with the normalized rows
// optionally stored for later launches) and the residual add folded into
// the product before it (the epilogue), as the decode step launches them
// at 1-8 rows (docs/cuda.md, "Norms inside the mat-vec").
//   norm=1:  y = rmsnorm(x, scale) W^T, the normalized rows rounded to dtype
//   add=1:   y = y0 + (x W^T + bias)          (bias=1: a bias [out])
// Variant 1 is launch_matvec with the fusion; variant 2 the separate
// launches it replaces (launch_residual_rmsnorm, launch_matvec, and
// launch_residual_rmsnorm's add), both checked against the reference.
// tests/cuda/test_gemm.cpp checks that the two give the same bits.
#include <array>
#include <memory>
#include <stdexcept>
#include <string>

#include <xtensor/xtensor.hpp>

#include "cuda/bf16_host.h"
#include "cuda/kernel_cases/device_arrays.h"
#include "cuda/kernel_cases/kernel_case.h"
#include "cuda/kernels/kernels.h"
#include "reference/linear.h"
#include "reference/rmsnorm.h"

namespace astrai::cuda::cases {
namespace {

constexpr float kFusedNormEps = 1e-5f;

struct MatvecFusedRun final : KernelRun {
  DType t;
  int rows, in, out;
  bool norm, store, add, bias, offset;
  std::vector<float> x, scale, w, b, y0;
  DeviceBuffer d_x, d_scale, d_w, d_b, d_y, d_h, d_proj;
  explicit MatvecFusedRun(const KernelShape& s)
      : t(s.dtype), rows(s["rows"]), in(s["in"]), out(s["out"]), norm(s["norm"] != 0), store(norm && s["store"] != 0),
        add(s["add"] != 0), bias(add && s["bias"] != 0), offset(s["offset"] != 0) {
    if (rows < 1 || rows > kMatvecMaxRows) throw std::invalid_argument("matvec_fused: rows must be 1 to 8");
    // A norm's input is the float32 residual stream; a plain input is in dtype.
    x = test::random_values(size_t(rows) * size_t(in), s.seed, norm ? DType::Float32 : t, 2.0f);
    w = test::random_values(size_t(out) * size_t(in), s.seed + 1, t);
    scale = test::random_values(size_t(in), s.seed + 2, t);
    if (bias) b = test::random_values(size_t(out), s.seed + 3, t);
    if (add) y0 = test::random_values(size_t(rows) * size_t(out), s.seed + 4, DType::Float32, 4.0f);
    d_x = test::upload(x, norm ? DType::Float32 : t);
    d_w = test::upload(w, t);
    d_scale = test::upload(scale, t);
    if (bias) d_b = test::upload(b, t);
    d_y = add ? test::upload(y0, DType::Float32) : test::nan_filled(size_t(rows) * size_t(out), DType::Float32);
    d_h = test::nan_filled(size_t(rows) * size_t(in), t);
    d_proj = test::nan_filled(size_t(rows) * size_t(out), DType::Float32);
    const double es = double(dtype_size(t));
    bytes = es * double(out) * in + (norm ? 4.0 * rows * in + es * in : es * double(rows) * in) +
            4.0 * double(rows) * out * (add ? 2 : 1) + (store ? es * double(rows) * in : 0.0) +
            (bias ? es * double(out) : 0.0);
    flops = 2.0 * double(rows) * in * out;
  }
  void launch(int variant, cudaStream_t stream) override {
    if (add && restore_inputs) test::upload_to(d_y.get(), y0, DType::Float32);
    const NormScale ns{d_scale.get(), offset ? 1.0f : 0.0f};
    if (variant == 1) {
      MatvecFusion f;
      if (norm) f.norm_rows = d_x.as<float>(), f.norm = ns, f.eps = kFusedNormEps, f.store = store ? d_h.get() : nullptr;
      f.accumulate = add;
      f.bias = bias ? d_b.get() : nullptr;
      launch_matvec(norm ? nullptr : d_x.get(), d_w.get(), t, rows, in, out, d_y.as<float>(), out, stream, f);
    } else if (variant == 2) {
      // The norm reads x and adds nothing; the add is the norm kernel's residual add (its output unused).
      if (norm) launch_residual_rmsnorm(d_x.as<float>(), {}, ns, t, in, kFusedNormEps, nullptr, rows, d_h.get(), stream);
      const void* input = norm ? d_h.get() : d_x.get();
      if (!add) return launch_matvec(input, d_w.get(), t, rows, in, out, d_y.as<float>(), out, stream);
      launch_matvec(input, d_w.get(), t, rows, in, out, d_proj.as<float>(), out, stream);
      if (scratch_norm.get() == nullptr) scratch_norm = test::upload(std::vector<float>(size_t(out), 1.0f), t);
      if (scratch_out.get() == nullptr) scratch_out = test::nan_filled(size_t(rows) * size_t(out), t);
      launch_residual_rmsnorm(d_y.as<float>(), {d_proj.as<float>(), bias ? d_b.get() : nullptr, {}},
                              {scratch_norm.get(), 0.0f}, t, out, kFusedNormEps, nullptr, rows, scratch_out.get(), stream);
    } else {
      throw std::invalid_argument("matvec_fused has no variant " + std::to_string(variant));
    }
  }
  DeviceBuffer scratch_norm, scratch_out;  // variant 2's add: a norm output nobody reads
  // y, then the stored normalized rows (store=1).
  std::vector<float> result() override {
    std::vector<float> r = test::download(d_y, size_t(rows) * size_t(out), DType::Float32);
    if (store) {
      const std::vector<float> h = test::download(d_h, size_t(rows) * size_t(in), t);
      r.insert(r.end(), h.begin(), h.end());
    }
    return r;
  }
  std::vector<float> expected() override {
    xt::xtensor<float, 2> X({size_t(rows), size_t(in)}), W({size_t(out), size_t(in)});
    std::copy(x.begin(), x.end(), X.begin());
    std::copy(w.begin(), w.end(), W.begin());
    if (norm) {  // rmsnorm() with the scale (1 + w at offset 1), then the dtype's rounding
      xt::xtensor<float, 1> S(std::array<size_t, 1>{size_t(in)});
      for (size_t k = 0; k < size_t(in); ++k) S(k) = offset ? 1.0f + scale[k] : scale[k];
      X = rmsnorm(X, S, kFusedNormEps);
      if (t == DType::BFloat16)
        for (float& v : X) v = round_to_bf16(v);
    }
    const auto y = linear(X, W);
    std::vector<float> e(y.begin(), y.end());
    if (add)
      for (size_t r = 0; r < size_t(rows); ++r)
        for (size_t j = 0; j < size_t(out); ++j) {
          float& v = e[r * size_t(out) + j];
          v = y0[r * size_t(out) + j] + (bias ? v + b[j] : v);
        }
    if (store) e.insert(e.end(), X.begin(), X.end());
    return e;
  }
};

KernelShape fused_shape(int rows, int in, int out, bool norm, bool store, bool add) {
  return {DType::BFloat16, 1,
          {{"rows", rows}, {"in", in}, {"out", out}, {"norm", norm}, {"store", store}, {"add", add}, {"bias", 0},
           {"offset", 0}}};
}

}  // namespace

KernelCase matvec_fused_case() {
  return {"matvec_fused", "cuda/kernels/matvec.cu (MatvecFusion)",
          "rmsnorm() in reference/rmsnorm.cpp, then linear() in reference/linear.cpp, then the residual add", 2,
          {1e-5, 1e-2,
           "float32: the sums of squares and the products in another order; bf16: the reference's sum of squares "
           "in another order can move a normalized value across a bf16 rounding boundary (one ulp, 2^-8 of one "
           "term of a product, or of one stored value)"},
          [](const Pick& pick) {
            // in ragged (the scalar paths and the tail) or a multiple of 8 (16-byte loads and 4-wide sums).
            const int in = pick(0, 1) ? 8 * pick(1, 80) : pick(1, 600);
            const int norm = pick(0, 1), add = pick(0, 1);
            return KernelShape{pick(0, 1) ? DType::BFloat16 : DType::Float32, pick_seed(pick),
                               {{"rows", pick(1, kMatvecMaxRows)}, {"in", in}, {"out", pick(1, 300)},
                                {"norm", norm}, {"store", pick(0, 1)}, {"add", add || !norm}, {"bias", pick(0, 1)},
                                {"offset", pick(0, 1)}}};
          },
          // Qwen3-30B-A3B's decode step at 1 row: qkv after the norm, the output projection adding to x, the
          // router after the norm storing it for the experts; Llama-3-8B's gate/up after the norm, down adding.
          {fused_shape(1, 2048, 5120, true, false, false), fused_shape(1, 4096, 2048, false, false, true),
           fused_shape(1, 2048, 128, true, true, false), fused_shape(1, 4096, 28672, true, false, false),
           fused_shape(1, 14336, 4096, false, false, true), fused_shape(8, 4096, 6144, true, false, false)},
          [](const KernelShape& s) { return std::make_unique<MatvecFusedRun>(s); }};
}

}  // namespace astrai::cuda::cases
