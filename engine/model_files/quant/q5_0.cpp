// Q5_0: 32 weights in 22 bytes (5.5 bits per weight), symmetric.
//
//   byte  0      2            6                            22
//        +------+------------+----------------------------+
//        | d    | qh: uint32 | qs[16]: low nibble of qs[j]|
//        | f16  | LE, bit j  | is element j's low 4 bits, |
//        |      | = bit 4 of | high nibble element j + 16 |
//        |      | element j  |                            |
//        +------+------------+----------------------------+
//
//   q[j] = (qs[j] & 15) | (bit j of qh) << 4,  q[j + 16] = (qs[j] >> 4) | (bit j + 16 of qh) << 4
//   x[i] = d * (q[i] - 16)
#include "engine/model_files/quant/block_bytes.h"
#include "engine/model_files/quant/block_decoders.h"

namespace astrai::quant {

void decode_q5_0(std::span<const std::byte, 22> block, std::span<float, kQK> out) {
  const float d = half_at(block, 0);
  uint32_t qh = 0;
  for (size_t b = 0; b < 4; ++b) qh |= uint32_t(byte_at(block, 2 + b)) << (8 * b);
  for (size_t j = 0; j < 16; ++j) {
    const uint8_t q = byte_at(block, 6 + j);
    const int lo = int(q & 15) | int((qh >> j) & 1) << 4;
    const int hi = int(q >> 4) | int((qh >> (j + 16)) & 1) << 4;
    out[j] = d * float(lo - 16);
    out[j + 16] = d * float(hi - 16);
  }
}

}  // namespace astrai::quant
