// reference/rmsnorm.h against the formula in float64.
#include <cmath>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "reference/rmsnorm.h"
#include "tests/reference/random_tensors.h"

using namespace astrai;

TEST_CASE("rmsnorm matches x / sqrt(mean(x^2) + eps) * w in float64") {
  rc::prop("rmsnorm ~ float64", [] {
    const size_t rows = *rc::gen::inRange<size_t>(1, 8);
    const size_t dim = *rc::gen::inRange<size_t>(1, 1024);
    const float scale = *rc::gen::element(1e-3f, 1.0f, 1e3f);
    const auto seed = *rc::gen::arbitrary<uint64_t>();
    const auto x = astrai::test::random_matrix(rows, dim, seed, scale);
    const auto w = astrai::test::random_vector(dim, seed + 1, -2.0f, 2.0f);
    const float eps = 1e-5f;
    const auto y = rmsnorm(x, w, eps);
    xt::xtensor<double, 2> want(x.shape());
    for (size_t r = 0; r < rows; ++r) {
      double ms = 0.0;
      for (size_t i = 0; i < dim; ++i) ms += double(x(r, i)) * double(x(r, i));
      const double inv = 1.0 / std::sqrt(ms / double(dim) + double(eps));
      for (size_t i = 0; i < dim; ++i) want(r, i) = double(x(r, i)) * inv * double(w(i));
    }
    // Each output is one scaled input; the only float32 error is the sum of
    // squares and a few roundings: well under 1e-5 relative.
    RC_ASSERT(astrai::test::all_finite(y));
    RC_ASSERT(astrai::test::relative_error(y, want) < 1e-5);
  });
}

TEST_CASE("rmsnorm output has unit root-mean-square when the weight is 1") {
  const auto x = astrai::test::random_matrix(3, 257, 42, 5.0f);
  const xt::xtensor<float, 1> ones = xt::ones<float>({257});
  const auto y = rmsnorm(x, ones, 1e-6f);
  for (size_t r = 0; r < 3; ++r) {
    double ms = 0.0;
    for (size_t i = 0; i < 257; ++i) ms += double(y(r, i)) * double(y(r, i));
    CHECK(std::sqrt(ms / 257.0) == Approx(1.0).epsilon(1e-5));
  }
}
