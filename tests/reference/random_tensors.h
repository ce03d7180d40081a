// Random tensors for property tests. RapidCheck draws the shape and a seed;
// the values come from that seed, so a failing case replays from RapidCheck's
// reported seed like any other.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include <xtensor/xtensor.hpp>

namespace astrai::test {

inline xt::xtensor<float, 2> random_matrix(size_t rows, size_t cols, uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(-scale, scale);
  xt::xtensor<float, 2> m({rows, cols});
  for (auto& x : m) x = uniform(rng);
  return m;
}

inline xt::xtensor<float, 1> random_vector(size_t n, uint64_t seed, float lo, float hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(lo, hi);
  auto v = xt::xtensor<float, 1>::from_shape({n});
  for (auto& x : v) x = uniform(rng);
  return v;
}

// ||a - b|| / ||b|| in float64: the normwise relative error of a float32 result
// a against a float64 reference b.
template <class A, class B>
double relative_error(const A& a, const B& b) {
  double diff = 0.0, norm = 0.0;
  auto ia = a.begin();
  for (auto ib = b.begin(); ib != b.end(); ++ib, ++ia) {
    const double d = double(*ia) - double(*ib);
    diff += d * d;
    norm += double(*ib) * double(*ib);
  }
  return norm == 0.0 ? std::sqrt(diff) : std::sqrt(diff / norm);
}

template <class A>
bool all_finite(const A& a) {
  for (auto x : a)
    if (!std::isfinite(x)) return false;
  return true;
}

}  // namespace astrai::test
