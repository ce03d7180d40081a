// Q4_0: 32 weights in 18 bytes (4.5 bits per weight), symmetric.
//
//   byte  0      2                                   18
//        +------+-----------------------------------+
//        | d    | qs[16]: low nibble of qs[j] is    |
//        | f16  | element j, high nibble j + 16      |
//        +------+-----------------------------------+
//
//   x[j] = d * ((qs[j] & 15) - 8),  x[j + 16] = d * ((qs[j] >> 4) - 8)
#include "engine/model_files/quant/block_bytes.h"
#include "engine/model_files/quant/block_decoders.h"

namespace astrai::quant {

void decode_q4_0(std::span<const std::byte, 18> block, std::span<float, kQK> out) {
  const float d = half_at(block, 0);
  for (size_t j = 0; j < 16; ++j) {
    const uint8_t q = byte_at(block, 2 + j);
    out[j] = d * float(int(q & 15) - 8);
    out[j + 16] = d * float(int(q >> 4) - 8);
  }
}

}  // namespace astrai::quant
