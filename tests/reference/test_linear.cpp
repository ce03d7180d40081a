// reference/linear.h against a float64 matrix product, and its batch invariance.
#include <algorithm>
#include <cmath>
#include <cstring>

#include <catch2/catch.hpp>
#include <cblas.h>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "reference/linear.h"
#include "tests/reference/random_tensors.h"

using namespace astrai;
using astrai::test::random_matrix;

namespace {

xt::xtensor<double, 2> linear_f64(const xt::xtensor<float, 2>& x, const xt::xtensor<float, 2>& W) {
  xt::xtensor<double, 2> y({x.shape(0), W.shape(0)});
  for (size_t r = 0; r < x.shape(0); ++r)
    for (size_t o = 0; o < W.shape(0); ++o) {
      double s = 0.0;
      for (size_t i = 0; i < x.shape(1); ++i) s += double(x(r, i)) * double(W(o, i));
      y(r, o) = s;
    }
  return y;
}

// The largest error of any output against the float64 product, relative to
// that output's sum of |x_i W_oi|: a float32 dot product's rounding error is
// bounded by a multiple of that sum (Higham, Accuracy and Stability, 3.1),
// however much the sum itself cancels. (Relative to the result, a short dot
// product that cancels to near zero fails any bound: rows 1, in 26, out 1
// did, under OpenBLAS's Haswell kernels.)
double error_relative_to_magnitudes(const xt::xtensor<float, 2>& y, const xt::xtensor<float, 2>& x,
                                    const xt::xtensor<float, 2>& W) {
  const auto exact = linear_f64(x, W);
  double worst = 0.0;
  for (size_t r = 0; r < x.shape(0); ++r)
    for (size_t o = 0; o < W.shape(0); ++o) {
      double magnitude = 0.0;
      for (size_t i = 0; i < x.shape(1); ++i) magnitude += std::fabs(double(x(r, i)) * double(W(o, i)));
      if (magnitude > 0.0) worst = std::max(worst, std::fabs(double(y(r, o)) - exact(r, o)) / magnitude);
    }
  return worst;
}

}  // namespace

TEST_CASE("linear matches a float64 product") {
  // Each float32 output is within n * 2^-24 of sum_i |x_i W_oi| of the exact
  // value at worst (n <= 800: 4.8e-5), and within about sqrt(n) * 2^-24
  // (1.7e-6) for random rounding; 1e-5 is six times that.
  rc::prop("linear ~ float64", [] {
    const size_t rows = *rc::gen::inRange<size_t>(1, 9);
    const size_t in = *rc::gen::inRange<size_t>(1, 800);
    const size_t out = *rc::gen::inRange<size_t>(1, 300);
    const auto seed = *rc::gen::arbitrary<uint64_t>();
    const auto x = random_matrix(rows, in, seed);
    const auto W = random_matrix(out, in, seed + 1);
    const auto y = linear(x, W);
    RC_ASSERT(astrai::test::all_finite(y));
    RC_ASSERT(error_relative_to_magnitudes(y, x, W) < 1e-5);
  });
}

TEST_CASE("linear is batch invariant: a row's result does not depend on the other rows") {
  rc::prop("row r alone == row r in a batch, bit for bit", [] {
    const size_t rows = *rc::gen::inRange<size_t>(1, 40);
    const size_t in = *rc::gen::inRange<size_t>(1, 800);
    const size_t out = *rc::gen::inRange<size_t>(1, 800);
    const auto seed = *rc::gen::arbitrary<uint64_t>();
    const auto x = random_matrix(rows, in, seed);
    const auto W = random_matrix(out, in, seed + 1);
    const auto batched = linear(x, W);
    const size_t r = *rc::gen::inRange<size_t>(0, rows);
    xt::xtensor<float, 2> one({1, in});
    std::memcpy(one.data(), x.data() + r * in, in * sizeof(float));
    const auto alone = linear(one, W);
    // Exact: both are one sgemv with the same W and the same x row (linear.h),
    // and BLAS runs on one thread, so nothing about the call differs.
    RC_ASSERT(std::memcmp(alone.data(), batched.data() + r * out, out * sizeof(float)) == 0);
  });
}

// Why linear() does not use one sgemm for the whole batch: this documents that
// OpenBLAS's sgemm result for a row changes with the number of rows. If a
// future OpenBLAS made it invariant, this test would fail and tell us that a
// faster batched linear() has become possible. It depends on the BLAS build
// and CPU, so it is hidden; run it with: test_reference "[diagnostic]"
TEST_CASE("OpenBLAS sgemm is not batch invariant (why linear() calls sgemv per row)", "[.][diagnostic]") {
  const size_t in = 288, out = 768, rows = 64;
  const auto x = random_matrix(rows, in, 7);
  const auto W = random_matrix(out, in, 8);
  auto gemm = [&](size_t m) {
    std::vector<float> y(m * out);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(m), int(out), int(in), 1.0f, x.data(), int(in),
                W.data(), int(in), 0.0f, y.data(), int(out));
    return y;
  };
  const auto all = gemm(rows);
  int differing = 0;
  for (size_t m : {1, 2, 3, 5, 8, 17, 33}) {
    const auto part = gemm(m);
    for (size_t r = 0; r < m; ++r)
      if (std::memcmp(&part[r * out], &all[r * out], out * sizeof(float)) != 0) ++differing;
  }
  INFO("rows whose sgemm result changed with the batch size: " << differing);
  CHECK(differing > 0);
}
