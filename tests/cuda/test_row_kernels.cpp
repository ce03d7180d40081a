// What the row-wise kernels must get right beyond the kernel-case property
// (cuda/kernel_cases/row_kernel_cases.cpp, run by test_kernel_cases.cpp):
// RMSNorm's epsilon where it matters, the residual stream updated exactly,
// and bf16 conversion rounding to nearest even on the listed ties.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include <xtensor/xadapt.hpp>
#include <xtensor/xview.hpp>

#include "cuda/bf16_host.h"
#include "cuda/kernels/kernels.h"
#include "reference/rmsnorm.h"
#include "tests/cuda/gpu_test_support.h"

using namespace astrai;
using cuda::DType;

namespace {

xt::xtensor<float, 2> as_matrix(const std::vector<float>& v, size_t rows, size_t cols) {
  xt::xtensor<float, 2> m({rows, cols});
  std::copy(v.begin(), v.end(), m.begin());
  return m;
}


}  // namespace

TEST_CASE("RMSNorm's epsilon counts where mean(x^2) is as small as it", "[cuda]") {
  // With |x| ~ 1 the 1e-5 of epsilon moves the result by ~5e-6, inside the
  // float32 tolerance: a kernel that dropped it would pass the property above.
  // At |x| ~ 3e-3, mean(x^2) ~ 3e-6 and epsilon changes the scale about 2x.
  ASTRAI_REQUIRE_GPU();
  const int dim = 256, rows = 3;
  const float eps = 1e-5f;
  const auto x = test::random_values(size_t(rows * dim), 91, DType::Float32, 3e-3f);
  const auto weight = test::random_values(size_t(dim), 92, DType::Float32);
  const auto d_x = test::upload(x, DType::Float32);
  const auto d_w = test::upload(weight, DType::Float32);
  auto d_out = test::nan_filled(size_t(rows * dim), DType::Float32);
  cuda::launch_residual_rmsnorm(d_x.as<float>(), {}, {d_w.get()}, DType::Float32, dim, eps, nullptr, rows, d_out.get(),
                                nullptr);
  xt::xtensor<float, 1> w = xt::adapt(weight, {size_t(dim)});
  const auto normed = rmsnorm(as_matrix(x, size_t(rows), size_t(dim)), w, eps);
  const std::vector<float> expected(normed.begin(), normed.end());
  CHECK(test::compare(test::download(d_out, expected.size(), DType::Float32), expected,
                      test::tolerance_for(DType::Float32)) == "");
}

TEST_CASE("the residual add updates the float32 residual stream exactly", "[cuda]") {
  // Exact: one float32 addition per element on both sides.
  ASTRAI_REQUIRE_GPU();
  const int dim = 300, rows = 5;
  auto x = test::random_values(size_t(rows * dim), 94, DType::Float32, 3.0f);
  const auto delta = test::random_values(x.size(), 95, DType::Float32);
  const auto weight = test::random_values(size_t(dim), 96, DType::Float32);
  const auto d_x = test::upload(x, DType::Float32), d_delta = test::upload(delta, DType::Float32);
  const auto d_w = test::upload(weight, DType::Float32);
  auto d_out = test::nan_filled(x.size(), DType::Float32);
  const cuda::ResidualDelta d{d_delta.as<float>(), nullptr, {}};
  cuda::launch_residual_rmsnorm(d_x.as<float>(), d, {d_w.get()}, DType::Float32, dim, 1e-5f, nullptr, rows, d_out.get(),
                                nullptr);
  for (size_t i = 0; i < x.size(); ++i) x[i] += delta[i];
  CHECK(test::download(d_x, x.size(), DType::Float32) == x);
}

TEST_CASE("float to bf16 on the device rounds to nearest, ties to even, as the host does", "[cuda]") {
  // Exact: both sides are the same IEEE rounding of the same float. Round
  // toward zero differs on every value whose low 16 bits exceed 0x8000, and
  // on half of the ties, which are listed explicitly.
  ASTRAI_REQUIRE_GPU();
  std::vector<float> values = test::random_values(4096, 93, DType::Float32, 100.0f);
  for (uint32_t bits : {0x3f808000u, 0x3f818000u, 0xbf808000u, 0xbf818000u, 0x3f80ffffu, 0x7f7fffffu, 0x00008000u}) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    values.push_back(f);
  }
  const auto d_in = test::upload(values, DType::Float32);
  auto d_out = test::nan_filled(values.size(), DType::BFloat16);
  cuda::launch_convert_from_float(d_in.as<float>(), values.size(), d_out.get(), DType::BFloat16, nullptr);
  const auto got = test::download(d_out, values.size(), DType::BFloat16);
  size_t mismatches = 0;
  for (size_t i = 0; i < values.size(); ++i)
    if (cuda::float_to_bf16_bits(got[i]) != cuda::float_to_bf16_bits(values[i])) ++mismatches;
  CHECK(mismatches == 0);
}
