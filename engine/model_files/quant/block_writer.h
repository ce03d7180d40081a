// Writing one quantized block: a byte, a little-endian float16 scale.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/model_files/float_formats.h"

namespace astrai::quant {

inline void put_byte(std::span<std::byte> block, size_t i, unsigned v) { block[i] = std::byte(uint8_t(v)); }

// Stores `value` rounded to float16 at block[i], block[i + 1]; returns the
// stored value as float32 (what a decoder will read back).
inline float put_half(std::span<std::byte> block, size_t i, float value) {
  const uint16_t h = float_to_half(value);
  put_byte(block, i, h & 0xFF);
  put_byte(block, i + 1, h >> 8);
  return half_to_float(h);
}

}  // namespace astrai::quant
