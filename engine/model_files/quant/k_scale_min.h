// The twelve scale bytes of Q4_K and Q5_K: eight 6-bit scales and eight 6-bit
// minimums, one pair per group of 32 weights; and the decoding both types
// share (their layouts are drawn in q4_k.cpp and q5_k.cpp).
//
//   byte   0..3   bits 0-5: scale j (j < 4)     bits 6-7: high bits of scale j + 4
//   byte   4..7   bits 0-5: min j (j < 4)       bits 6-7: high bits of min j + 4
//   byte  8..11   bits 0-3: low bits of scale j + 4 (j = byte - 8)
//                 bits 4-7: low bits of min j + 4
#pragma once

#include <cstdint>
#include <optional>
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

// x[32 g + l] = d * scale_g * q - dmin * min_g for the 8 groups g, with d and
// dmin the float16s at bytes 0 and 2, the scales at byte 4, q the nibble
// (low for even g, high for odd) of qs[32 (g / 2) + l] at byte qs_at, plus
// 16 times bit g of qh[l] at byte *qh_at (Q5_K's fifth bit).
inline void decode_scale_min_groups(std::span<const std::byte> block, size_t qs_at, std::optional<size_t> qh_at,
                                    std::span<float, 256> out) {
  const float d = half_at(block, 0);
  const float dmin = half_at(block, 2);
  for (size_t g = 0; g < 8; ++g) {
    const auto [sc, m] = k_scale_min(block, 4, g);
    const float scale = d * float(sc);
    const float min = dmin * float(m);
    const size_t qs = qs_at + 32 * (g / 2);
    const int shift = 4 * int(g % 2);
    for (size_t l = 0; l < 32; ++l) {
      int q = (byte_at(block, qs + l) >> shift) & 15;
      if (qh_at) q += 16 * ((byte_at(block, *qh_at + l) >> g) & 1);
      out[32 * g + l] = scale * float(q) - min;
    }
  }
}

}  // namespace astrai::quant
