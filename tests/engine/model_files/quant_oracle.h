// An independent decoder of quantized ggml blocks for the tests: each
// element's value is computed on its own, by reading the bits that hold its
// quant, scale and minimum at positions computed from the element index
// (written from ggml-common.h's block layouts), in double, then rounded to
// float once. The engine's decoders (engine/model_files/quant/) loop over
// groups and nibbles instead.
//
// Why comparing the two bit for bit is right: every term of a formula is a
// float16 (a multiple of 2^-24 below 2^16) times small integers (a quant of
// at most 6 bits, a scale of at most 8), so each term and their sum or
// difference is a multiple of 2^-24 below 2^29: at most 53 significant bits,
// exact in double. The double is then rounded to float once. The engine's
// float32 products hold at most 24 significant bits (exact too) and its one
// addition or subtraction rounds the same exact value once: the same float.
// NaN (from a NaN or infinite float16) is compared as NaN, not by bits.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>

#include "engine/model_files/gguf/gguf_types.h"

namespace astrai::test {

// Bits [first, first + count) of the block, least significant bit of byte 0
// first (bit i is bit i % 8 of byte i / 8), as an unsigned integer.
inline uint32_t block_bits(std::span<const uint8_t> block, size_t first, size_t count) {
  uint32_t v = 0;
  for (size_t k = 0; k < count; ++k) {
    const size_t i = first + k;
    v |= uint32_t((block[i / 8] >> (i % 8)) & 1) << k;
  }
  return v;
}

// A little-endian float16 at byte `at`, from the IEEE formula (not float_formats).
inline double oracle_half(std::span<const uint8_t> block, size_t at) {
  const uint32_t h = block_bits(block, 8 * at, 16);
  const int s = int(h >> 15), e = int((h >> 10) & 31), m = int(h & 1023);
  double v;
  if (e == 31) v = m ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else v = e == 0 ? std::ldexp(double(m), -24) : std::ldexp(1.0 + m / 1024.0, e - 15);
  return s ? -v : v;
}

// Element e of a block of `type`.
inline float oracle_element(GgmlType type, std::span<const uint8_t> b, size_t e) {
  auto nibble = [&](size_t byte, size_t which) { return block_bits(b, 8 * byte + 4 * which, 4); };
  switch (type) {
    case GgmlType::Q8_0: {
      const int q = int(int8_t(uint8_t(block_bits(b, 16 + 8 * e, 8))));
      return float(oracle_half(b, 0) * q);
    }
    case GgmlType::Q4_0: return float(oracle_half(b, 0) * (int(nibble(2 + e % 16, e / 16)) - 8));
    case GgmlType::Q4_1: return float(oracle_half(b, 0) * nibble(4 + e % 16, e / 16) + oracle_half(b, 2));
    case GgmlType::Q5_0: {
      const int q = int(nibble(6 + e % 16, e / 16) + 16 * block_bits(b, 16 + e, 1));
      return float(oracle_half(b, 0) * (q - 16));
    }
    case GgmlType::Q5_1: {
      const int q = int(nibble(8 + e % 16, e / 16) + 16 * block_bits(b, 32 + e, 1));
      return float(oracle_half(b, 0) * q + oracle_half(b, 2));
    }
    case GgmlType::IQ4_NL: {
      static constexpr std::array<int, 16> grid = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                   1,    13,   25,  38,  53,  69,  89,  113};
      return float(oracle_half(b, 0) * grid[nibble(2 + e % 16, e / 16)]);
    }
    case GgmlType::MXFP4: {
      // E2M1 (sign bit 3; exponent bits 2..1, bias 1; mantissa bit 0) of the
      // nibble, times 2^(e - 127) for the scale byte e (OCP MX spec).
      const unsigned q = nibble(1 + e % 16, e / 16);
      const int exponent = int(q >> 1 & 3), mantissa = int(q & 1);
      const double magnitude = exponent == 0 ? 0.5 * mantissa : std::ldexp(1.0 + 0.5 * mantissa, exponent - 1);
      if (magnitude == 0.0) return 0.0f;  // -0 (nibble 8) is +0 in ggml's kvalues_mxfp4: equal values
      return float((q & 8 ? -magnitude : magnitude) * std::ldexp(1.0, int(block_bits(b, 0, 8)) - 127));
    }
    case GgmlType::Q2_K: {
      const size_t g = e / 16;
      const int q = int(block_bits(b, 8 * (16 + 32 * (e / 128) + e % 32) + 2 * ((e % 128) / 32), 2));
      const int sc = int(nibble(g, 0)), m = int(nibble(g, 1));
      return float(oracle_half(b, 80) * sc * q - oracle_half(b, 82) * m);
    }
    case GgmlType::Q3_K: {
      const size_t g = e / 16;
      const int low = int(block_bits(b, 8 * (32 + 32 * (e / 128) + e % 32) + 2 * ((e % 128) / 32), 2));
      const int high = int(block_bits(b, 8 * (e % 32) + e / 32, 1));
      const int sc = int(nibble(96 + g % 8, g / 8) + 16 * block_bits(b, 8 * (96 + 8 + g % 4) + 2 * (g / 4), 2));
      return float(oracle_half(b, 108) * (sc - 32) * (low + 4 * high - 4));
    }
    case GgmlType::Q4_K:
    case GgmlType::Q5_K: {
      const size_t g = e / 32;
      const size_t qs = type == GgmlType::Q4_K ? 16 : 48;
      int q = int(nibble(qs + 32 * (e / 64) + e % 32, (e % 64) / 32));
      if (type == GgmlType::Q5_K) q += 16 * int(block_bits(b, 8 * (16 + e % 32) + g, 1));
      // The 12 scale bytes from byte 4: group g < 4 has its 6-bit scale in
      // byte g and min in byte g + 4; group g >= 4 has the low 4 bits of both
      // in byte g + 4 (scale low nibble, min high) and the top 2 bits in bits
      // 6-7 of bytes g - 4 (scale) and g (min).
      const size_t s = 8 * 4;
      const uint32_t sc = g < 4 ? block_bits(b, s + 8 * g, 6)
                                : block_bits(b, s + 8 * (g + 4), 4) | block_bits(b, s + 8 * (g - 4) + 6, 2) << 4;
      const uint32_t m = g < 4 ? block_bits(b, s + 8 * (g + 4), 6)
                               : block_bits(b, s + 8 * (g + 4) + 4, 4) | block_bits(b, s + 8 * g + 6, 2) << 4;
      return float(oracle_half(b, 0) * sc * q - oracle_half(b, 2) * m);
    }
    case GgmlType::Q6_K: {
      const size_t k = (e % 128) / 32;
      const uint32_t low = nibble(64 * (e / 128) + 32 * (k % 2) + e % 32, k / 2);
      const uint32_t high = block_bits(b, 8 * (128 + 32 * (e / 128) + e % 32) + 2 * k, 2);
      const int sc = int(int8_t(uint8_t(block_bits(b, 8 * (192 + e / 16), 8))));
      return float(oracle_half(b, 208) * sc * (int(low | high << 4) - 32));
    }
    default: throw std::logic_error("oracle_element: no oracle for " + ggml_type_name(type));
  }
}

}  // namespace astrai::test
