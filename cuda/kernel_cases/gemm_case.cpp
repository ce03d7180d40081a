// The linear-layer case: y = x W^T through GemmRunner (cuBLASLt; its
// emulated stand-in in the emulated build), in the default per-bucket mode.
#include <xtensor/xtensor.hpp>

#include "cuda/gemm.h"
#include "cuda/kernel_cases/device_arrays.h"
#include "cuda/kernel_cases/kernel_case.h"
#include "reference/linear.h"

namespace astrai::cuda::cases {
namespace {

struct GemmRun final : KernelRun {
  DType t;
  int rows, in, out;
  std::vector<float> x, w;
  DeviceBuffer d_x, d_w, d_y;
  GemmRunner gemm;
  explicit GemmRun(const KernelShape& s)
      : t(s.dtype), rows(s["rows"]), in(s["in"]), out(s["out"]),
        x(test::random_values(size_t(rows) * size_t(in), s.seed, t)),
        w(test::random_values(size_t(out) * size_t(in), s.seed + 1, t)), d_x(test::upload(x, t)),
        d_w(test::upload(w, t)), d_y(test::nan_filled(size_t(rows) * size_t(out), DType::Float32)) {
    bytes = double(dtype_size(t)) * (double(rows) * in + double(out) * in) + 4.0 * double(rows) * out;
    flops = 2.0 * double(rows) * in * out;
  }
  void launch(int variant, cudaStream_t stream) override {
    if (variant != 1) throw std::invalid_argument("gemm has no variant " + std::to_string(variant));
    gemm.run(d_x.get(), d_w.get(), t, rows, in, out, d_y.as<float>(), stream);
  }
  std::vector<float> result() override { return test::download(d_y, size_t(rows) * size_t(out), DType::Float32); }
  std::vector<float> expected() override {
    xt::xtensor<float, 2> X({size_t(rows), size_t(in)}), W({size_t(out), size_t(in)});
    std::copy(x.begin(), x.end(), X.begin());
    std::copy(w.begin(), w.end(), W.begin());
    const auto y = linear(X, W);
    return {y.begin(), y.end()};
  }
};

KernelShape gemm_shape(int rows, int n) { return {DType::BFloat16, 1, {{"rows", rows}, {"in", n}, {"out", n}}}; }

}  // namespace

KernelCase gemm_case() {
  return {"gemm", "cuda/gemm.cpp (cuBLASLt)", "linear() in reference/linear.cpp", 1,
          {1e-5, 1e-5,
           "the inputs are exact in both types (bf16 values are the oracle's inputs) and both accumulate in "
           "float32: only the order of the sum differs"},
          [](const Pick& pick) {
            // Row counts across the first three algorithm buckets (cuda/gemm.h).
            return KernelShape{pick(0, 1) ? DType::BFloat16 : DType::Float32, uint32_t(pick(0, 1 << 30)),
                               {{"rows", pick(1, 200)}, {"in", pick(1, 400)}, {"out", pick(1, 400)}}};
          },
          {gemm_shape(1, 4096), gemm_shape(16, 4096), gemm_shape(256, 4096), gemm_shape(4096, 4096)},
          [](const KernelShape& s) { return std::make_unique<GemmRun>(s); }};
}

}  // namespace astrai::cuda::cases
