// Bit-level float32 <-> binary16 / bfloat16 conversions (see float_formats.h).
#include "engine/model_files/float_formats.h"

#include <bit>
#include <cmath>
#include <stdexcept>

#include "engine/model_files/mapped_file.h"

namespace astrai {
namespace {

// Shifts `mantissa` right by `shift` (1..31) bits, rounding to nearest with
// ties to even on the bits shifted out.
uint32_t shift_right_round_even(uint32_t mantissa, int shift) {
  const uint32_t kept = mantissa >> shift;
  const uint32_t dropped = mantissa & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  return kept + ((dropped > half || (dropped == half && (kept & 1))) ? 1 : 0);
}

}  // namespace

uint16_t float_to_half(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000);
  const uint32_t abs = x & 0x7FFFFFFF;
  if (abs > 0x7F800000) return uint16_t(sign | 0x7E00 | ((abs >> 13) & 0x3FF));  // NaN: quiet, top payload bits
  // 65520 = 0x477FF000 is halfway between 65504 (the largest half, odd
  // mantissa) and 65536; ties go to even, i.e. up to infinity.
  if (abs >= 0x477FF000) return uint16_t(sign | 0x7C00);
  const int exponent = int(abs >> 23) - 127;  // unbiased float exponent
  if (exponent >= -14) {
    // Normal half: rebias the exponent, round the 23-bit mantissa to 10 bits.
    // A carry out of the mantissa correctly bumps the exponent.
    const uint32_t biased = (uint32_t(exponent + 15) << 10) | ((abs & 0x7FFFFF) >> 13);
    const uint32_t dropped = abs & 0x1FFF;
    const bool up = dropped > 0x1000 || (dropped == 0x1000 && (biased & 1));
    return uint16_t(sign | (biased + (up ? 1 : 0)));
  }
  // Subnormal half: value = m * 2^-24 with m in [0, 1024). A float with
  // exponent e has value (1.mantissa) * 2^e = full * 2^(e - 23), so
  // m = full * 2^(e + 1), a right shift by -(e + 1) (>= 14).
  if (exponent < -25) return sign;  // below 2^-25: rounds to zero
  const uint32_t full = (abs & 0x7FFFFF) | 0x800000;
  return uint16_t(sign | shift_right_round_even(full, -(exponent + 1)));
}

float half_to_float(uint16_t bits) {
  const uint32_t sign = uint32_t(bits & 0x8000) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1F;
  const uint32_t mantissa = bits & 0x3FF;
  if (exponent == 0x1F) return std::bit_cast<float>(sign | 0x7F800000 | (mantissa << 13));  // inf / NaN
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float32.
    const float magnitude = std::ldexp(float(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
}

uint16_t float_to_bf16(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & 0x7FFFFFFF) > 0x7F800000) return uint16_t((x >> 16) | 0x0040);  // NaN: keep sign, make quiet
  // Adding 0x7FFF plus the lowest kept bit rounds the dropped 16 bits to
  // nearest-even; overflow past the largest finite value lands on infinity.
  return uint16_t((x + 0x7FFF + ((x >> 16) & 1)) >> 16);
}

float bf16_to_float(uint16_t bits) { return std::bit_cast<float>(uint32_t(bits) << 16); }

void decode_floats(FloatEncoding encoding, std::span<const std::byte> bytes, std::span<float> out) {
  if (encoding == FloatEncoding::F32) return copy_le_floats(bytes, out);
  if (bytes.size() != out.size() * 2) throw std::logic_error("decode_floats: byte count is not 2 * float count");
  for (size_t i = 0; i < out.size(); ++i) {
    const auto bits = uint16_t(std::to_integer<uint16_t>(bytes[2 * i]) | (std::to_integer<uint16_t>(bytes[2 * i + 1]) << 8));
    out[i] = encoding == FloatEncoding::F16 ? half_to_float(bits) : bf16_to_float(bits);
  }
}

}  // namespace astrai
