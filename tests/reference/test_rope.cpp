// reference/rope.h: norm preservation, relative-position property, the two
// layouts, a float64 rotation, and Llama 3.1's frequency scaling against the
// formula in float64 (tests/reference/rope_f64.h) in each of its three bands.
#include <cmath>
#include <vector>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "reference/rope.h"
#include "tests/reference/random_tensors.h"
#include "tests/reference/rope_f64.h"

using namespace astrai;

// In a namespace of its own, TEST_CASEs too: the test program is a unity
// build (tests/meson.build), where other files have helpers of the same names.
namespace test_rope {

// Llama 3.1's scaling with drawn parameters (original context from a few
// positions up, so that small heads have pairs in every band), or off.
RopeScaling draw_scaling() {
  RopeScaling s;
  if (!*rc::gen::arbitrary<bool>()) return s;
  s.factor = *rc::gen::element(2.0f, 3.5f, 8.0f, 32.0f);
  s.low_freq_factor = *rc::gen::element(0.5f, 1.0f, 2.0f);
  s.high_freq_factor = s.low_freq_factor + *rc::gen::element(1.0f, 3.0f);
  s.original_context = *rc::gen::inRange(4, 16385);
  return s;
}

struct RopeCase {
  int head_dim, n_heads;
  RopeLayout layout;
  float theta;
  RopeScaling scaling;
  std::vector<float> freqs() const { return rope_frequencies(head_dim, theta, scaling); }
};

RopeCase draw_case() {
  const int head_dim = 2 * *rc::gen::inRange(1, 65);
  return {head_dim, *rc::gen::inRange(1, 5), *rc::gen::element(RopeLayout::AdjacentPairs, RopeLayout::RotateHalf),
          *rc::gen::element(10000.0f, 500000.0f, 100.0f), draw_scaling()};
}

// Index of the partner of pair i's first element.
std::pair<size_t, size_t> pair_indices(RopeLayout layout, size_t i, size_t head_dim) {
  return layout == RopeLayout::AdjacentPairs ? std::pair{2 * i, 2 * i + 1} : std::pair{i, i + head_dim / 2};
}


TEST_CASE("RoPE preserves the norm of every rotated pair") {
  rc::prop("|(a', b')| == |(a, b)|", [] {
    const auto c = draw_case();
    const int pos = *rc::gen::inRange(0, 8192);
    const auto x = astrai::test::random_matrix(1, size_t(c.head_dim * c.n_heads), *rc::gen::arbitrary<uint64_t>());
    auto y = x;
    const std::vector<int> positions{pos};
    apply_rope(y, positions, c.freqs(), c.layout);
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
      apply_rope(rq, a, c.freqs(), c.layout);
      apply_rope(rk, b, c.freqs(), c.layout);
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
    apply_rope(y, positions, c.freqs(), c.layout);
    xt::xtensor<double, 2> want(x.shape());
    for (size_t r = 0; r < rows; ++r)
      for (size_t h = 0; h < size_t(c.n_heads); ++h)
        for (size_t i = 0; i < size_t(c.head_dim / 2); ++i) {
          const auto [ia, ib] = pair_indices(c.layout, i, size_t(c.head_dim));
          const size_t o = h * size_t(c.head_dim);
          const double angle = positions[r] * test::rope_frequency_f64(int(i), c.head_dim, c.theta, c.scaling);
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
    apply_rope(half, positions, rope_frequencies(d, 10000.0f), RopeLayout::RotateHalf);
    apply_rope(permuted, positions, rope_frequencies(d, 10000.0f), RopeLayout::AdjacentPairs);
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
  apply_rope(y, positions, rope_frequencies(16, 10000.0f), RopeLayout::AdjacentPairs);
  CHECK(bool(y == x));
}

TEST_CASE("unscaled frequencies are llama2.c's, bit for bit") {
  // Exact: the same float expression 1.0f / powf(theta, float(2i) / float(head_dim))
  // as run.c (one correctly rounded division of the same powf result); the
  // golden tests against run.c rely on it.
  rc::prop("rope_frequencies == run.c's freq", [] {
    const int head_dim = 2 * *rc::gen::inRange(1, 129);
    const float theta = *rc::gen::element(10000.0f, 500000.0f, 1000000.0f);
    const auto f = rope_frequencies(head_dim, theta);
    RC_ASSERT(f.size() == size_t(head_dim / 2));
    for (int i = 0; i < head_dim / 2; ++i)
      RC_ASSERT(f[size_t(i)] == 1.0f / powf(theta, float(2 * i) / float(head_dim)));
  });
}

namespace {

// Relative error allowed between rope_frequencies() and the float64 formula.
// The unscaled frequency is a float powf of a rounded exponent: the exponent's
// rounding (2^-24 relative) times ln(theta) <= 13.9 for theta <= 1e6 moves it
// by at most 8.3e-7, plus an ulp each for powf and the division: 1e-6 covers
// it. The medium band's blend is quadratic in f, and its relative sensitivity
// d ln(f') / d ln(f) is at most 2 + (factor - 1) low / (high - low) (largest
// where the band meets the low one), so the error bound grows by that much.
// Rounding the blend to float adds an ulp. A wrong band or a swapped factor
// is off by at least (factor - 1) / factor >= 0.5 somewhere.
// Linear and YaRN scale f by a factor that does not depend on f (YaRN's
// ramp is a function of the pair index), so their sensitivity is 1.
double frequency_tolerance(const RopeScaling& s) {
  const double amplification =
      s.enabled() && s.kind == RopeScalingKind::Llama3
          ? 2.0 + double(s.factor - 1.0f) * s.low_freq_factor / (s.high_freq_factor - s.low_freq_factor)
          : 1.0;
  return 1e-6 * amplification + 1.2e-7;
}

// YaRN with drawn parameters: contexts and turn counts that put the ramp
// anywhere from before the first pair to past the last.
RopeScaling draw_yarn() {
  RopeScaling s;
  s.kind = RopeScalingKind::Yarn;
  s.factor = *rc::gen::element(1.0f, 2.0f, 4.0f, 32.0f, 40.0f);
  s.original_context = *rc::gen::inRange(4, 262145);
  s.beta_slow = *rc::gen::element(0.5f, 1.0f, 2.0f);
  s.beta_fast = s.beta_slow * *rc::gen::element(1.5f, 8.0f, 32.0f);
  s.truncate = *rc::gen::arbitrary<bool>();
  return s;
}

}  // namespace

TEST_CASE("Llama 3.1 frequencies equal the formula in float64, pair by pair, in all three bands") {
  rc::prop("rope_frequencies ~ float64 formula", [] {
    const int head_dim = 2 * *rc::gen::inRange(1, 129);
    const float theta = *rc::gen::element(10000.0f, 500000.0f, 1000000.0f);
    RopeScaling s = draw_scaling();
    if (!s.enabled()) s.factor = 8.0f;
    const auto f = rope_frequencies(head_dim, theta, s);
    bool bands[4] = {false, false, false, false};
    for (int i = 0; i < head_dim / 2; ++i) {
      test::RopeBand band;
      const double want = test::rope_frequency_f64(i, head_dim, theta, s, &band);
      bands[int(band)] = true;
      RC_ASSERT(std::abs(double(f[size_t(i)]) - want) <= frequency_tolerance(s) * want);
    }
    RC_CLASSIFY(bands[int(test::RopeBand::Medium)], "a pair in the medium band");
    RC_CLASSIFY(bands[int(test::RopeBand::High)] && bands[int(test::RopeBand::Medium)] &&
                    bands[int(test::RopeBand::Low)],
                "pairs in all three bands");
  });
}

TEST_CASE("Llama 3.1's own scaling: high band kept, low band divided by 8, medium blended") {
  // Llama 3.1 8B: head_dim 128, theta 500000, rope_scaling {factor 8,
  // low_freq_factor 1, high_freq_factor 4, original_max_position_embeddings 8192}.
  // Wavelengths 2 pi 500000^(i/64): pairs 0-28 are below 8192/4 (kept),
  // 29-34 between (blended), 35-63 above 8192/1 (divided by 8).
  const RopeScaling s{8.0f, 1.0f, 4.0f, 8192};
  const auto scaled = rope_frequencies(128, 500000.0f, s), plain = rope_frequencies(128, 500000.0f);
  int counts[4] = {0, 0, 0, 0};
  for (int i = 0; i < 64; ++i) {
    INFO("pair " << i);
    test::RopeBand band;
    const double want = test::rope_frequency_f64(i, 128, 500000.0, s, &band);
    ++counts[int(band)];
    CHECK(std::abs(double(scaled[size_t(i)]) - want) <= frequency_tolerance(s) * want);
    // Exact: the kept band returns the unscaled float untouched, and dividing
    // a float by 8 in float64 and rounding back is exact (a power of two).
    if (band == test::RopeBand::High) CHECK(scaled[size_t(i)] == plain[size_t(i)]);
    if (band == test::RopeBand::Low) CHECK(scaled[size_t(i)] == plain[size_t(i)] / 8.0f);
    if (band == test::RopeBand::Medium) {  // strictly between its two neighbours' rules
      CHECK(scaled[size_t(i)] < plain[size_t(i)]);
      CHECK(scaled[size_t(i)] > plain[size_t(i)] / 8.0f);
    }
  }
  CHECK(counts[int(test::RopeBand::High)] == 29);
  CHECK(counts[int(test::RopeBand::Medium)] == 6);
  CHECK(counts[int(test::RopeBand::Low)] == 29);
}

TEST_CASE("linear and YaRN frequencies equal the formulas in float64, pair by pair") {
  rc::prop("rope_frequencies ~ float64 (linear, YaRN)", [] {
    const int head_dim = 2 * *rc::gen::inRange(1, 129);
    const float theta = *rc::gen::element(10000.0f, 150000.0f, 1000000.0f);
    RopeScaling s = draw_yarn();
    if (*rc::gen::arbitrary<bool>()) s.kind = RopeScalingKind::Linear;
    const auto f = rope_frequencies(head_dim, theta, s);
    bool kept = false, interpolated = false, blended = false;
    for (int i = 0; i < head_dim / 2; ++i) {
      const double want = test::rope_frequency_f64(i, head_dim, theta, s);
      RC_ASSERT(std::abs(double(f[size_t(i)]) - want) <= frequency_tolerance(s) * want);
      if (s.kind == RopeScalingKind::Yarn) {
        const double ramp = test::yarn_ramp_f64(i, head_dim, theta, s);
        kept = kept || ramp == 0.0, interpolated = interpolated || ramp == 1.0;
        blended = blended || (ramp > 0.0 && ramp < 1.0);
      }
    }
    RC_CLASSIFY(kept && blended && interpolated, "YaRN with pairs kept, blended and interpolated");
  });
}

TEST_CASE("gpt-oss's YaRN: fast pairs kept, slow ones divided by 32, truncation moves the blend") {
  // gpt-oss-20b: head_dim 64, rope_theta 150000, rope_scaling {factor 32,
  // original_max_position_embeddings 4096, beta_fast 32, beta_slow 1,
  // truncate false}. The ramp runs from pair 64 ln(4096 / (64 pi)) /
  // (2 ln 150000) = 8.09 to 64 ln(4096 / (2 pi)) / (2 ln 150000) = 17.40:
  // pairs 0-8 kept, 9-17 blended, 18-31 interpolated; truncated (llama.cpp,
  // and transformers' default) it runs from 8 to 18.
  RopeScaling s{.factor = 32.0f, .original_context = 4096, .kind = RopeScalingKind::Yarn, .truncate = false};
  const auto plain = rope_frequencies(64, 150000.0f), yarn = rope_frequencies(64, 150000.0f, s);
  s.truncate = true;
  const auto truncated = rope_frequencies(64, 150000.0f, s);
  for (int i = 0; i < 32; ++i) {
    INFO("pair " << i);
    const auto k = size_t(i);
    if (i <= 8) CHECK(yarn[k] == plain[k]);  // ramp 0: the float f_i itself
    // Dividing by 32 (a power of two) in float64 and rounding back is exact.
    if (i >= 18) CHECK(yarn[k] == plain[k] / 32.0f);
    if (i >= 9 && i <= 17) {
      CHECK(yarn[k] < plain[k]);
      CHECK(yarn[k] > plain[k] / 32.0f);
      CHECK(truncated[k] != yarn[k]);  // (i - 8) / 10 against (i - 8.09) / 9.31
    }
  }
  // transformers' default attention factor: 0.1 ln 32 + 1.
  CHECK(rope_attention_factor(s) == Approx(1.34657359).epsilon(1e-7));
  s.attention_factor = 1.5f;
  CHECK(rope_attention_factor(s) == 1.5f);
  CHECK(rope_attention_factor(RopeScaling{8.0f, 1.0f, 4.0f, 8192}) == 1.0f);  // Llama 3.1 scales no magnitude
}

TEST_CASE("RoPE with a magnitude scales the rotated pair by it") {
  rc::prop("apply_rope(m) ~ m * rotation in float64", [] {
    const int head_dim = 2 * *rc::gen::inRange(1, 33);
    const float m = *rc::gen::element(0.5f, 1.0f, 1.3465736f, 2.0f);
    auto x = test::random_matrix(1, size_t(head_dim), *rc::gen::arbitrary<uint64_t>());
    const auto x0 = x;
    const std::vector<int> pos{*rc::gen::inRange(0, 5000)};
    const auto f = rope_frequencies(head_dim, 10000.0f);
    apply_rope(x, pos, f, RopeLayout::RotateHalf, m);
    const size_t half = size_t(head_dim / 2);
    for (size_t i = 0; i < half; ++i) {
      const double angle = double(rope_angle(pos[0], f[i]));  // the float angle both sides use
      const double a = x0(0, i), b = x0(0, i + half);
      const double want_a = m * (a * std::cos(angle) - b * std::sin(angle));
      const double want_b = m * (a * std::sin(angle) + b * std::cos(angle));
      // Each product of two floats and their sum: a few ulps of |m| (|a| + |b|).
      const double bound = 4e-7 * m * (std::abs(a) + std::abs(b));
      RC_ASSERT(std::abs(x(0, i) - want_a) <= bound);
      RC_ASSERT(std::abs(x(0, i + half) - want_b) <= bound);
    }
  });
}

TEST_CASE("each layer's RoPE: Gemma 3's sliding layers use their own base, unscaled") {
  ModelConfig c{.dim = 16, .hidden_dim = 8, .n_layers = 3, .n_heads = 2, .n_kv_heads = 1, .vocab_size = 4,
                .max_seq_len = 64, .rope_theta = 1e6f};
  c.rope_scaling = RopeScaling{.factor = 8.0f, .kind = RopeScalingKind::Linear};
  c.sliding_window = 16;
  c.sliding_layers = {true, false, true};
  c.sliding_rope_theta = 10000.0f;
  c.validate();
  CHECK(rope_frequencies(c, 0) == rope_frequencies(8, 10000.0f));
  CHECK(rope_frequencies(c, 1) == rope_frequencies(8, 1e6f, c.rope_scaling));
  CHECK(rope_frequencies(c, 2) == rope_frequencies(8, 10000.0f));
  c.sliding_rope_theta = 0.0f;  // one base for all (gpt-oss): every layer scaled
  CHECK(rope_frequencies(c, 0) == rope_frequencies(8, 1e6f, c.rope_scaling));
}

}  // namespace test_rope
