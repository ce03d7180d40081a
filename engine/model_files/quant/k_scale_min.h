// The twelve scale bytes of Q4_K and Q5_K: eight 6-bit scales and eight 6-bit
// minimums, one pair per group of 32 weights.
//
//   byte   0..3   bits 0-5: scale j (j < 4)     bits 6-7: high bits of scale j + 4
//   byte   4..7   bits 0-5: min j (j < 4)       bits 6-7: high bits of min j + 4
//   byte  8..11   bits 0-3: low bits of scale j + 4 (j = byte - 8)
//                 bits 4-7: low bits of min j + 4
#pragma once

#include <cstdint>
#include <span>

#include "engine/model_files/quant/block_bytes.h"

namespace astrai::quant {

struct ScaleMin {
  int scale;
  int min;
};

// Group j (0..7) of the 12 bytes starting at block[at].
inline ScaleMin k_scale_min(std::span<const std::byte> block, size_t at, size_t j) {
  auto b = [&](size_t i) { return int(byte_at(block, at + i)); };
  if (j < 4) return {b(j) & 63, b(j + 4) & 63};
  return {(b(j + 4) & 15) | (b(j - 4) >> 6) << 4, (b(j + 4) >> 4) | (b(j) >> 6) << 4};
}

}  // namespace astrai::quant
