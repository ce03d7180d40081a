// reference/rope.h: norm preservation, relative-position property, the two
// layouts, and a float64 rotation.
#include <cmath>
#include <vector>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "reference/rope.h"
#include "tests/reference/random_tensors.h"

using namespace astrai;

namespace {

struct RopeCase {
  int head_dim, n_heads;
  RopeLayout layout;
  float theta;
};

RopeCase draw_case() {
  const int head_dim = 2 * *rc::gen::inRange(1, 65);
  return {head_dim, *rc::gen::inRange(1, 5), *rc::gen::element(RopeLayout::AdjacentPairs, RopeLayout::RotateHalf),
          *rc::gen::element(10000.0f, 500000.0f, 100.0f)};
}

// Index of the partner of pair i's first element.
std::pair<size_t, size_t> pair_indices(RopeLayout layout, size_t i, size_t head_dim) {
  return layout == RopeLayout::AdjacentPairs ? std::pair{2 * i, 2 * i + 1} : std::pair{i, i + head_dim / 2};
}

}  // namespace

TEST_CASE("RoPE preserves the norm of every rotated pair") {
  rc::prop("|(a', b')| == |(a, b)|", [] {
    const auto c = draw_case();
    const int pos = *rc::gen::inRange(0, 8192);
    const auto x = astrai::test::random_matrix(1, size_t(c.head_dim * c.n_heads), *rc::gen::arbitrary<uint64_t>());
    auto y = x;
    const std::vector<int> positions{pos};
    apply_rope(y, positions, c.head_dim, c.theta, c.layout);
    for (int h = 0; h < c.n_heads; ++h)
      for (size_t i = 0; i < size_t(c.head_dim / 2); ++i) {
        const auto [a, b] = pair_indices(c.layout, i, size_t(c.head_dim));
        const size_t o = size_t(h * c.head_dim);
        const double before = std::hypot(double(x(0, o + a)), double(x(0, o + b)));
        const double after = std::hypot(double(y(0, o + a)), double(y(0, o + b)));
        RC_ASSERT(std::abs(after - before) <= 1e-6 * std::max(1.0, before));
      }
  });
}

TEST_CASE("q.k after RoPE depends only on the position difference") {
  rc::prop("dot(R(m)q, R(n)k) == dot(R(m+s)q, R(n+s)k)", [] {
    const auto c = draw_case();
    const int m = *rc::gen::inRange(0, 512), n = *rc::gen::inRange(0, 512), shift = *rc::gen::inRange(0, 512);
    const auto seed = *rc::gen::arbitrary<uint64_t>();
    const auto q = astrai::test::random_matrix(1, size_t(c.head_dim), seed);
    const auto k = astrai::test::random_matrix(1, size_t(c.head_dim), seed + 1);
    auto dot_at = [&](int pq, int pk) {
      auto rq = q, rk = k;
      const std::vector<int> a{pq}, b{pk};
      apply_rope(rq, a, c.head_dim, c.theta, c.layout);
      apply_rope(rk, b, c.head_dim, c.theta, c.layout);
      double s = 0.0;
      for (size_t i = 0; i < size_t(c.head_dim); ++i) s += double(rq(0, i)) * double(rk(0, i));
      return s;
    };
    // Angles up to ~1000 rad are rounded to float before cos/sin, so each
    // pair carries an angle error of about 1000 * 6e-8 = 6e-5 rad; the dot
    // product of unit-scale vectors can move by that times |q||k|.
    double qn = 0.0, kn = 0.0;
    for (size_t i = 0; i < size_t(c.head_dim); ++i) {
      qn += double(q(0, i)) * q(0, i);
      kn += double(k(0, i)) * k(0, i);
    }
    RC_ASSERT(std::abs(dot_at(m, n) - dot_at(m + shift, n + shift)) <= 3e-4 * std::sqrt(qn * kn));
  });
}

TEST_CASE("RoPE matches the rotation formula in float64, in both layouts") {
  rc::prop("rope ~ float64", [] {
    const auto c = draw_case();
    const size_t rows = *rc::gen::inRange<size_t>(1, 6);
    std::vector<int> positions;
    for (size_t r = 0; r < rows; ++r) positions.push_back(*rc::gen::inRange(0, 4096));
    const auto x = astrai::test::random_matrix(rows, size_t(c.head_dim * c.n_heads), *rc::gen::arbitrary<uint64_t>());
    auto y = x;
    apply_rope(y, positions, c.head_dim, c.theta, c.layout);
    xt::xtensor<double, 2> want(x.shape());
    for (size_t r = 0; r < rows; ++r)
      for (size_t h = 0; h < size_t(c.n_heads); ++h)
        for (size_t i = 0; i < size_t(c.head_dim / 2); ++i) {
          const auto [ia, ib] = pair_indices(c.layout, i, size_t(c.head_dim));
          const size_t o = h * size_t(c.head_dim);
          const double angle = positions[r] * std::pow(double(c.theta), -2.0 * double(i) / c.head_dim);
          const double a = x(r, o + ia), b = x(r, o + ib);
          want(r, o + ia) = a * std::cos(angle) - b * std::sin(angle);
          want(r, o + ib) = a * std::sin(angle) + b * std::cos(angle);
        }
    // The float32 frequency and angle carry a relative error of a few ulps
    // (angle up to 4096 rad: ~5e-4 rad absolute) so this is looser than 1e-5.
    RC_ASSERT(astrai::test::relative_error(y, want) < 1e-3);
  });
}

TEST_CASE("RotateHalf is AdjacentPairs on a permuted head") {
  // Moving x[i], x[i + d/2] to positions 2i, 2i+1 turns one layout into the other.
  rc::prop("layouts agree up to the permutation", [] {
    const int d = 2 * *rc::gen::inRange(1, 65);
    const int pos = *rc::gen::inRange(0, 2048);
    const auto x = astrai::test::random_matrix(1, size_t(d), *rc::gen::arbitrary<uint64_t>());
    xt::xtensor<float, 2> permuted({1, size_t(d)});
    for (int i = 0; i < d / 2; ++i) {
      permuted(0, size_t(2 * i)) = x(0, size_t(i));
      permuted(0, size_t(2 * i + 1)) = x(0, size_t(i + d / 2));
    }
    auto half = x;
    const std::vector<int> positions{pos};
    apply_rope(half, positions, d, 10000.0f, RopeLayout::RotateHalf);
    apply_rope(permuted, positions, d, 10000.0f, RopeLayout::AdjacentPairs);
    for (int i = 0; i < d / 2; ++i) {
      RC_ASSERT(half(0, size_t(i)) == permuted(0, size_t(2 * i)));
      RC_ASSERT(half(0, size_t(i + d / 2)) == permuted(0, size_t(2 * i + 1)));
    }
  });
}

TEST_CASE("RoPE at position 0 is the identity") {
  const auto x = astrai::test::random_matrix(1, 64, 3);
  auto y = x;
  const std::vector<int> positions{0};
  apply_rope(y, positions, 16, 10000.0f, RopeLayout::AdjacentPairs);
  CHECK(bool(y == x));
}
