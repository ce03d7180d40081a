// cuBLASLt linear layers against linear() of reference/linear.cpp, and the
// batch invariance the GEMM runner is built for: a row's result has the same
// bits whatever the number of rows around it.
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "cuda/gemm.h"
#include "reference/linear.h"
#include "tests/cuda/gpu_test_support.h"

using namespace astrai;
using cuda::DType;

TEST_CASE("cuBLASLt y = x W^T matches the reference linear layer", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  cuda::GemmRunner gemm;
  rc::prop("random shapes, float32 and bf16 inputs, float32 output", [&] {
    const DType t = *rc::gen::element(DType::Float32, DType::BFloat16);
    const int rows = *rc::gen::inRange(1, 70), in = *rc::gen::inRange(1, 700), out = *rc::gen::inRange(1, 700);
    const uint32_t seed = *rc::gen::arbitrary<uint32_t>();
    const auto x = test::random_values(size_t(rows) * size_t(in), seed, t);
    const auto w = test::random_values(size_t(out) * size_t(in), seed + 1, t);
    const auto d_x = test::upload(x, t), d_w = test::upload(w, t);
    auto d_y = test::nan_filled(size_t(rows) * size_t(out), DType::Float32);
    gemm.run(d_x.get(), d_w.get(), t, rows, in, out, d_y.as<float>(), nullptr);
    xt::xtensor<float, 2> X({size_t(rows), size_t(in)}), Wm({size_t(out), size_t(in)});
    std::copy(x.begin(), x.end(), X.begin());
    std::copy(w.begin(), w.end(), Wm.begin());
    const auto expected = linear(X, Wm);
    // Inputs are exact in both cases (bf16 values are the oracle's inputs), and
    // accumulation is float32 in both: the float32 tolerance applies.
    const auto err = test::compare(test::download(d_y, expected.size(), DType::Float32),
                                   std::vector<float>(expected.begin(), expected.end()), 1e-5);
    RC_ASSERT(err == "");
  });
}

TEST_CASE("a GEMM row has the same bits whatever the number of rows", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  cuda::GemmRunner gemm;
  for (const DType t : {DType::Float32, DType::BFloat16}) {
    const int in = 512, out = 1376;
    const auto w = test::random_values(size_t(out) * size_t(in), 7, t);
    const auto d_w = test::upload(w, t);
    std::vector<float> first_row_alone;
    for (const int rows : {1, 2, 3, 8, 17, 64, 100, 256}) {
      const auto x = test::random_values(size_t(rows) * size_t(in), 11, t);  // row 0 is the same every time
      const auto d_x = test::upload(x, t);
      auto d_y = test::nan_filled(size_t(rows) * size_t(out), DType::Float32);
      gemm.run(d_x.get(), d_w.get(), t, rows, in, out, d_y.as<float>(), nullptr);
      const auto y = test::download(d_y, size_t(out), DType::Float32);
      if (rows == 1) first_row_alone = y;
      INFO(cuda::dtype_name(t) << ", " << rows << " rows; " << gemm.invariance_note());
      // Exact only because GemmRunner keeps one algorithm per weight shape; where
      // cuBLASLt cannot, batch_invariant() is false and says why (cuda/gemm.h).
      CHECK(y == first_row_alone);
    }
    CHECK(gemm.batch_invariant());
  }
}
