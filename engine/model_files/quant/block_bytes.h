// Little helpers for reading one quantized block: a byte, a little-endian
// float16 scale. Blocks are fixed-size spans, so every index is in bounds by
// construction of the caller's loop (the sizes come from ggml_type_traits).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/model_files/float_formats.h"

namespace astrai::quant {

inline uint8_t byte_at(std::span<const std::byte> block, size_t i) { return std::to_integer<uint8_t>(block[i]); }

// The float16 stored little-endian at block[i], block[i + 1], as float32 (exact).
inline float half_at(std::span<const std::byte> block, size_t i) {
  return half_to_float(uint16_t(byte_at(block, i) | (byte_at(block, i + 1) << 8)));
}

}  // namespace astrai::quant
