// float32 <-> binary16 / bfloat16: known bit patterns, exhaustive round trips
// of every 16-bit pattern, and round-to-nearest-even checked as a property
// (the result is the closest representable value; ties pick the even one)
// and, where the compiler has _Float16, against its conversion.
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <bit>
#include <cmath>
#include <limits>

#include "engine/model_files/float_formats.h"

using astrai::bf16_to_float;
using astrai::float_to_bf16;
using astrai::float_to_half;
using astrai::half_to_float;

namespace {

float from_bits(uint32_t b) { return std::bit_cast<float>(b); }
bool is_nan_half(uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0; }

// The value of a finite binary16 pattern from the IEEE 754 formula,
// (-1)^s * 2^(e-15) * (1 + m/1024), or 2^-14 * m/1024 for e == 0.
double half_value_by_formula(uint16_t h) {
  const int s = h >> 15, e = (h >> 10) & 0x1F, m = h & 0x3FF;
  const double magnitude = e == 0 ? std::ldexp(double(m), -24) : std::ldexp(1.0 + m / 1024.0, e - 15);
  return s ? -magnitude : magnitude;
}

// Float bit patterns: half of the draws uniform over all 2^32 patterns, half
// with an exponent in [2^-30, 2^17), where binary16 rounding is interesting.
// (RapidCheck scales integers with its size parameter, so the uniform draw is
// resized to the nominal maximum.)
rc::Gen<uint32_t> gen_float_bits() {
  const auto uniform = rc::gen::resize(100, rc::gen::arbitrary<uint32_t>());
  const auto near_half_range = rc::gen::apply(
      [](bool negative, int exponent, uint32_t mantissa) {
        return (negative ? 0x80000000u : 0u) | (uint32_t(exponent + 127) << 23) | (mantissa & 0x7FFFFFu);
      },
      rc::gen::arbitrary<bool>(), rc::gen::resize(100, rc::gen::inRange(-30, 17)),
      rc::gen::resize(100, rc::gen::arbitrary<uint32_t>()));
  return rc::gen::oneOf(uniform, near_half_range);
}

}  // namespace

TEST_CASE("half: known bit patterns", "[float_formats]") {
  CHECK(float_to_half(1.0f) == 0x3C00);
  CHECK(float_to_half(-2.0f) == 0xC000);
  CHECK(float_to_half(0.0f) == 0x0000);
  CHECK(float_to_half(-0.0f) == 0x8000);
  CHECK(float_to_half(0.5f) == 0x3800);
  CHECK(float_to_half(65504.0f) == 0x7BFF);                      // largest finite half
  CHECK(float_to_half(65519.996f) == 0x7BFF);                    // just below the halfway point
  CHECK(float_to_half(65520.0f) == 0x7C00);                      // halfway to 65536: ties to even = inf
  CHECK(float_to_half(1e10f) == 0x7C00);
  CHECK(float_to_half(-1e10f) == 0xFC00);
  CHECK(float_to_half(std::numeric_limits<float>::infinity()) == 0x7C00);
  CHECK(float_to_half(-std::numeric_limits<float>::infinity()) == 0xFC00);
  CHECK(is_nan_half(float_to_half(std::numeric_limits<float>::quiet_NaN())));
  CHECK(is_nan_half(float_to_half(from_bits(0x7F800001))));     // signalling NaN with a low payload stays NaN
  CHECK(float_to_half(std::ldexp(1.0f, -14)) == 0x0400);         // smallest normal
  CHECK(float_to_half(std::ldexp(1.0f, -24)) == 0x0001);         // smallest subnormal
  CHECK(float_to_half(std::ldexp(1.0f, -25)) == 0x0000);         // tie between 0 and 2^-24: even is 0
  CHECK(float_to_half(std::ldexp(1.5f, -25)) == 0x0001);         // above the tie
  CHECK(float_to_half(std::ldexp(3.0f, -25)) == 0x0002);         // tie between 1 and 2 (x 2^-24): even is 2
  CHECK(float_to_half(std::ldexp(5.0f, -25)) == 0x0002);         // tie between 2 and 3: even is 2
  CHECK(float_to_half(1.0f + std::ldexp(1.0f, -11)) == 0x3C00);  // tie between 0x3C00 and 0x3C01: even
  CHECK(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3C02);  // tie between 0x3C01 and 0x3C02: even
  CHECK(float_to_half(2047.0f / 1024.0f * std::ldexp(1.0f, -14) + std::ldexp(1.0f, -25)) == 0x0800);
  CHECK(float_to_half(std::ldexp(1023.5f, -24)) == 0x0400);      // tie at the top of the subnormals rounds to normal
  CHECK(half_to_float(0x3C00) == 1.0f);
  CHECK(half_to_float(0x7BFF) == 65504.0f);
  CHECK(half_to_float(0x0001) == std::ldexp(1.0f, -24));
  CHECK(half_to_float(0x8000) == 0.0f);
  CHECK(std::signbit(half_to_float(0x8000)));
  CHECK(half_to_float(0x7C00) == std::numeric_limits<float>::infinity());
  CHECK(half_to_float(0xFC00) == -std::numeric_limits<float>::infinity());
  CHECK(std::isnan(half_to_float(0x7E00)));
}

TEST_CASE("half: every pattern converts exactly and round-trips", "[float_formats]") {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const float f = half_to_float(uint16_t(h));
    if (is_nan_half(uint16_t(h))) {
      REQUIRE(std::isnan(f));
      REQUIRE(is_nan_half(float_to_half(f)));
      continue;
    }
    if ((h & 0x7FFF) == 0x7C00) {
      REQUIRE(std::isinf(f));
    } else {
      REQUIRE(double(f) == half_value_by_formula(uint16_t(h)));
    }
    REQUIRE(float_to_half(f) == h);
  }
}

TEST_CASE("half: float_to_half picks the nearest half, ties to even", "[float_formats]") {
  rc::prop("nearest representable value", [] {
    const uint32_t bits = *gen_float_bits();
    const float x = from_bits(bits);
    RC_PRE(std::isfinite(x) && std::fabs(x) < 65520.0f);
    const uint16_t h = float_to_half(x);
    RC_ASSERT((h & 0x7FFF) <= 0x7BFF);
    RC_ASSERT(bool(h & 0x8000) == std::signbit(x));
    const double err = std::fabs(double(x) - half_value_by_formula(h));
    // The neighbours one unit up and down in magnitude.
    const uint16_t mag = h & 0x7FFF, sign = h & 0x8000;
    for (int step : {-1, 1}) {
      const int neighbour = int(mag) + step;
      if (neighbour < 0 || neighbour > 0x7BFF) continue;
      const double other = std::fabs(double(x) - half_value_by_formula(uint16_t(sign | neighbour)));
      RC_ASSERT(err <= other);
      if (err == other) RC_ASSERT((mag & 1) == 0);  // a tie went to the even mantissa
    }
  });
#if defined(__FLT16_MAX__)
  rc::prop("agrees with the compiler's _Float16 conversion", [] {
    const uint32_t bits = *gen_float_bits();
    const float x = from_bits(bits);
    RC_PRE(!std::isnan(x));
    RC_ASSERT(float_to_half(x) == std::bit_cast<uint16_t>(static_cast<_Float16>(x)));
  });
  // And a sweep over ~1M patterns spread across all 2^32 (a prime stride).
  uint64_t mismatches = 0, first_mismatch = 0;
  for (uint64_t b = 0; b < (uint64_t(1) << 32); b += 4099) {
    const float x = from_bits(uint32_t(b));
    if (std::isnan(x) || float_to_half(x) == std::bit_cast<uint16_t>(static_cast<_Float16>(x))) continue;
    if (mismatches++ == 0) first_mismatch = b;
  }
  INFO("first mismatching float bits: " << first_mismatch);
  CHECK(mismatches == 0);
#endif
}

TEST_CASE("bf16: known bit patterns", "[float_formats]") {
  CHECK(float_to_bf16(1.0f) == 0x3F80);
  CHECK(float_to_bf16(-2.0f) == 0xC000);
  CHECK(float_to_bf16(-0.0f) == 0x8000);
  CHECK(float_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 0x3F80);      // tie between 0x3F80 and 0x3F81: even
  CHECK(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3F82);  // tie between 0x3F81 and 0x3F82: even
  CHECK(float_to_bf16(from_bits(0x3F808001)) == 0x3F81);            // just above a tie
  CHECK(float_to_bf16(from_bits(0x3F807FFF)) == 0x3F80);            // just below a tie
  CHECK(float_to_bf16(std::numeric_limits<float>::max()) == 0x7F80);  // rounds up to inf
  CHECK(float_to_bf16(from_bits(0x7F7F7FFF)) == 0x7F7F);
  CHECK(float_to_bf16(std::numeric_limits<float>::infinity()) == 0x7F80);
  CHECK(float_to_bf16(-std::numeric_limits<float>::infinity()) == 0xFF80);
  CHECK(float_to_bf16(std::numeric_limits<float>::denorm_min()) == 0x0000);
  const uint16_t nan = float_to_bf16(from_bits(0x7F800001));  // payload only in the dropped bits
  CHECK((nan & 0x7F80) == 0x7F80);
  CHECK((nan & 0x7F) != 0);
  CHECK((float_to_bf16(from_bits(0xFFC00000)) & 0x8000) != 0);  // NaN keeps its sign
  CHECK(bf16_to_float(0x3F80) == 1.0f);
  CHECK(bf16_to_float(0x4049) == 3.140625f);
}

TEST_CASE("bf16: round trips and nearest-even rounding", "[float_formats]") {
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    const float f = bf16_to_float(uint16_t(b));
    REQUIRE(std::bit_cast<uint32_t>(f) == b << 16);
    if (!std::isnan(f)) REQUIRE(float_to_bf16(f) == b);
  }
  rc::prop("nearest representable value", [] {
    const uint32_t bits = *gen_float_bits();
    const float x = from_bits(bits);
    RC_PRE(std::isfinite(x));
    const uint16_t b = float_to_bf16(x);
    const double got = bf16_to_float(b);
    // The two bfloat16 values around x are x's bits truncated and that plus one unit.
    const uint32_t down = bits & 0xFFFF0000u, up = down + 0x10000u;
    const double lo = from_bits(down), hi = std::isinf(from_bits(up)) ? std::ldexp(1.0, 128) * (x < 0 ? -1 : 1)
                                                                      : double(from_bits(up));
    const double err_lo = std::fabs(double(x) - lo), err_hi = std::fabs(double(x) - hi);
    const double expected = err_lo < err_hi ? lo : err_hi < err_lo ? hi : (((down >> 16) & 1) ? hi : lo);
    if (std::fabs(expected) == std::ldexp(1.0, 128)) {
      RC_ASSERT(std::isinf(got));
    } else {
      RC_ASSERT(got == expected);
    }
  });
}
