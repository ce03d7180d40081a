// The linear-layer cases: y = x W^T through GemmRunner (the mat-vec kernel
// for up to 8 rows, else cuBLASLt or its emulated stand-in), in the default
// per-bucket mode (gemm v1) and with one cuBLASLt algorithm for every row
// count (gemm v2: OnePerShape, which is also the decode route before the
// mat-vec: the 64-row algorithm at 1-64 rows, so bench_cuda times the two
// side by side); and the mat-vec kernel alone (launch_matvec) at 1-8 rows.
#include <memory>
#include <stdexcept>
#include <string>

#include <xtensor/xtensor.hpp>

#include "cuda/gemm.h"
#include "cuda/kernel_cases/device_arrays.h"
#include "cuda/kernel_cases/kernel_case.h"
#include "cuda/kernels/kernels.h"
#include "reference/linear.h"

namespace astrai::cuda::cases {
namespace {

// Variant 1: GemmRunner::run, per bucket. Variant 2: GemmRunner::run with
// OnePerShape. Variant 3 (the matvec case's only one): launch_matvec directly.
struct GemmRun final : KernelRun {
  DType t;
  int rows, in, out;
  std::vector<float> x, w;
  DeviceBuffer d_x, d_w, d_y;
  GemmRunner gemm;
  std::unique_ptr<GemmRunner> one_per_shape;  // made at variant 2's first launch (a workspace each)
  explicit GemmRun(const KernelShape& s)
      : t(s.dtype), rows(s["rows"]), in(s["in"]), out(s["out"]),
        x(test::random_values(size_t(rows) * size_t(in), s.seed, t)),
        w(test::random_values(size_t(out) * size_t(in), s.seed + 1, t)), d_x(test::upload(x, t)),
        d_w(test::upload(w, t)), d_y(test::nan_filled(size_t(rows) * size_t(out), DType::Float32)) {
    bytes = double(dtype_size(t)) * (double(rows) * in + double(out) * in) + 4.0 * double(rows) * out;
    flops = 2.0 * double(rows) * in * out;
  }
  void launch(int variant, cudaStream_t stream) override {
    if (variant == 1) {
      gemm.run(d_x.get(), d_w.get(), t, rows, in, out, d_y.as<float>(), stream);
    } else if (variant == 2) {
      if (!one_per_shape) one_per_shape = std::make_unique<GemmRunner>(GemmAlgorithms::OnePerShape);
      one_per_shape->run(d_x.get(), d_w.get(), t, rows, in, out, d_y.as<float>(), stream);
    } else if (variant == 3) {
      launch_matvec(d_x.get(), d_w.get(), t, rows, in, out, d_y.as<float>(), out, stream);
    } else {
      throw std::invalid_argument("gemm has no variant " + std::to_string(variant));
    }
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
KernelShape gemm_shape(int rows, int in, int out) {
  return {DType::BFloat16, 1, {{"rows", rows}, {"in", in}, {"out", out}}};
}

}  // namespace

KernelCase gemm_case() {
  return {"gemm", "cuda/gemm.cpp (mat-vec or cuBLASLt)", "linear() in reference/linear.cpp", 2,
          {1e-5, 1e-5,
           "the inputs are exact in both types (bf16 values are the oracle's inputs) and both accumulate in "
           "float32: only the order of the sum differs"},
          [](const Pick& pick) {
            // Row counts across the first three algorithm buckets (cuda/gemm.h).
            return KernelShape{pick(0, 1) ? DType::BFloat16 : DType::Float32, uint32_t(pick(0, 1 << 30)),
                               {{"rows", pick(1, 200)}, {"in", pick(1, 400)}, {"out", pick(1, 400)}}};
          },
          // Llama-3-8B's qkv, wo, gate_up and down at 1 and 8 rows (v1: the mat-vec, v2: cuBLASLt's 64-row
          // algorithm), 32 and 64 rows (v1 may split K), then prefill sizes.
          {gemm_shape(1, 4096, 6144), gemm_shape(1, 4096, 4096), gemm_shape(1, 4096, 28672),
           gemm_shape(1, 14336, 4096), gemm_shape(8, 4096, 6144), gemm_shape(8, 14336, 4096),
           gemm_shape(32, 4096, 4096), gemm_shape(64, 14336, 4096), gemm_shape(256, 4096),
           gemm_shape(4096, 4096)},
          [](const KernelShape& s) { return std::make_unique<GemmRun>(s); }};
}

KernelCase matvec_case() {
  // Its variant 1 is launch_matvec (GemmRun's variant 2): a case of its own, so
  // the benchmark times the kernel on the decode shapes without GemmRunner.
  return {"matvec", "cuda/kernels/matvec.cu", "linear() in reference/linear.cpp", 1,
          {1e-5, 1e-5,
           "as gemm: exact inputs, float32 accumulation in another order; tests/cuda/test_gemm.cpp bounds it "
           "tighter, against float64"},
          [](const Pick& pick) {
            // Rows 1-8; in ragged (the tail) or a multiple of 8 (the 16-byte loads).
            const int in = pick(0, 1) ? 8 * pick(1, 80) : pick(1, 600);
            return KernelShape{pick(0, 1) ? DType::BFloat16 : DType::Float32, uint32_t(pick(0, 1 << 30)),
                               {{"rows", pick(1, kMatvecMaxRows)}, {"in", in}, {"out", pick(1, 300)}}};
          },
          // Llama-3-8B's decode GEMMs at 1 and 8 rows: qkv, wo, gate_up, down.
          {gemm_shape(1, 4096, 6144), gemm_shape(1, 4096, 4096), gemm_shape(1, 4096, 28672),
           gemm_shape(1, 14336, 4096), gemm_shape(8, 4096, 6144), gemm_shape(8, 14336, 4096)},
          [](const KernelShape& s) {
            struct MatvecRun final : KernelRun {
              std::unique_ptr<GemmRun> gemm;
              explicit MatvecRun(const KernelShape& shape) : gemm(std::make_unique<GemmRun>(shape)) {
                bytes = gemm->bytes;
                flops = gemm->flops;
              }
              void launch(int variant, cudaStream_t stream) override {
                if (variant != 1) throw std::invalid_argument("matvec has no variant " + std::to_string(variant));
                gemm->launch(3, stream);
              }
              std::vector<float> result() override { return gemm->result(); }
              std::vector<float> expected() override { return gemm->expected(); }
            };
            return std::make_unique<MatvecRun>(s);
          }};
}

}  // namespace astrai::cuda::cases
