// Helpers of the safetensors and model-folder tests: safetensors bytes
// assembled in the test from the format's description (8-byte little-endian
// header length, the JSON header spelled as text, the data), independently of
// the engine's writer; and the rounding a 16-bit file applies, computed here
// in double arithmetic rather than by engine/model_files/float_formats.
#pragma once

#include <cmath>
#include <limits>
#include <string>

#include "engine/model_files/hf/safetensors_file.h"
#include "tests/engine/model_files/byte_builder.h"

namespace astrai::test {

// A safetensors file: the header text (padded with spaces to `pad_to` bytes
// when longer is asked), then the data bytes.
inline std::string safetensors_bytes(std::string header, const std::string& data, size_t pad_to = 8) {
  while (header.size() % pad_to) header += ' ';
  ByteBuilder b;
  b.u64(header.size()).raw(header).raw(data);
  return b.bytes();
}

// x rounded to the nearest value of a binary format with `mantissa_bits`
// stored mantissa bits, smallest normal exponent `emin` and largest finite
// value `max`, ties to even, overflowing to infinity. In double: x / quantum
// is exact (a power-of-two scaling of a 24-bit significand), std::nearbyint
// rounds it to an integer with ties to even (the default rounding mode), and
// the product is exact again.
inline float round_to_format(float x, int mantissa_bits, int emin, double max) {
  if (std::isnan(x) || std::isinf(x) || x == 0.0f) return x;
  int e;
  std::frexp(double(x), &e);  // |x| = m * 2^e with m in [0.5, 1): the leading bit has exponent e - 1
  const int exponent = std::max(e - 1, emin);  // below emin: subnormal, fixed quantum
  const double quantum = std::ldexp(1.0, exponent - mantissa_bits);
  const double r = std::nearbyint(double(x) / quantum) * quantum;
  if (std::fabs(r) > max) return std::copysign(std::numeric_limits<float>::infinity(), x);
  return float(r);
}

// IEEE binary16: 10 mantissa bits, normal exponents from -14, largest 65504.
inline float round_to_half(float x) { return round_to_format(x, 10, -14, 65504.0); }
// bfloat16: 7 mantissa bits, float32's exponent range, largest (2 - 2^-7) * 2^127.
inline float round_to_bf16(float x) { return round_to_format(x, 7, -126, std::ldexp(255.0, 120)); }

// A value as a file of `dtype` stores it and reads it back.
inline float stored_as(float x, SafetensorsDType dtype) {
  switch (dtype) {
    case SafetensorsDType::F16: return round_to_half(x);
    case SafetensorsDType::BF16: return round_to_bf16(x);
    default: return x;  // F32: the 4 bytes are the float's own bits, copied out and back
  }
}

}  // namespace astrai::test
