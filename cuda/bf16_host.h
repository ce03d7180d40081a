// bfloat16 on the host, bit-exact with the device's __float2bfloat16 (round
// to nearest, ties to even; NaN stays NaN). Tests use it to build the
// oracle's inputs from the very values the GPU stores; the device page cache
// view uses it to read and write single rows.
#pragma once

#include <cstdint>
#include <cstring>

namespace astrai::cuda {

inline uint16_t float_to_bf16_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);  // quiet NaN
  // Round to nearest even: add 0x7fff plus the lowest kept bit, then truncate.
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

inline float bf16_bits_to_float(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

// The float nearest to x that bfloat16 can represent.
inline float round_to_bf16(float x) { return bf16_bits_to_float(float_to_bf16_bits(x)); }

}  // namespace astrai::cuda
