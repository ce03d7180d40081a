// Q5_1: 32 weights in 24 bytes (6 bits per weight), with a minimum.
//
//   byte  0      2      4            8                            24
//        +------+------+------------+----------------------------+
//        | d    | m    | qh: uint32 | qs[16]: low nibble of qs[j]|
//        | f16  | f16  | LE, bit i  | is element j's low 4 bits, |
//        |      |      | = bit 4 of | high nibble element j + 16 |
//        |      |      | element i  |                            |
//        +------+------+------------+----------------------------+
//
//   q[j] = (qs[j] & 15) | (bit j of qh) << 4,  q[j + 16] = (qs[j] >> 4) | (bit j + 16 of qh) << 4
//   x[i] = d * q[i] + m
#include "engine/model_files/quant/block_bytes.h"
#include "engine/model_files/quant/block_decoders.h"

namespace astrai::quant {

void decode_q5_1(std::span<const std::byte, 24> block, std::span<float, kQK> out) {
  const float d = half_at(block, 0);
  const float m = half_at(block, 2);
  uint32_t qh = 0;
  for (size_t b = 0; b < 4; ++b) qh |= uint32_t(byte_at(block, 4 + b)) << (8 * b);
  for (size_t j = 0; j < 16; ++j) {
    const uint8_t q = byte_at(block, 8 + j);
    const uint32_t lo = uint32_t(q & 15) | ((qh >> j) & 1) << 4;
    const uint32_t hi = uint32_t(q >> 4) | ((qh >> (j + 16)) & 1) << 4;
    out[j] = d * float(lo) + m;
    out[j + 16] = d * float(hi) + m;
  }
}

}  // namespace astrai::quant
