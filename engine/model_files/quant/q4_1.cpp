// Q4_1: 32 weights in 20 bytes (5 bits per weight), with a minimum.
//
//   byte  0      2      4                            20
//        +------+------+----------------------------+
//        | d    | m    | qs[16]: low nibble of qs[j]|
//        | f16  | f16  | is element j, high j + 16  |
//        +------+------+----------------------------+
//
//   x[j] = d * (qs[j] & 15) + m,  x[j + 16] = d * (qs[j] >> 4) + m
#include "engine/model_files/quant/block_bytes.h"
#include "engine/model_files/quant/block_decoders.h"

namespace astrai::quant {

void decode_q4_1(std::span<const std::byte, 20> block, std::span<float, kQK> out) {
  const float d = half_at(block, 0);
  const float m = half_at(block, 2);
  for (size_t j = 0; j < 16; ++j) {
    const uint8_t q = byte_at(block, 4 + j);
    out[j] = d * float(q & 15) + m;
    out[j + 16] = d * float(q >> 4) + m;
  }
}

}  // namespace astrai::quant
