// Q4_K: 256 weights in 144 bytes (4.5 bits per weight): 8 groups of 32, each
// with a 6-bit scale and a 6-bit minimum (k_scale_min.h), times float16s.
//
//   byte  0      2      4                16                            144
//        +------+------+----------------+-----------------------------+
//        | d    | dmin | scales[12]     | qs[128]: for each 64 weights,|
//        | f16  | f16  | (k_scale_min.h)| 32 bytes: low nibbles are   |
//        |      |      |                | the first 32, high the next |
//        +------+------+----------------+-----------------------------+
//
// Element e (c = e / 64, l = e % 32, group g = e / 32):
//   q = nibble (e % 64 < 32 ? low : high) of qs[32 c + l]
//   x[e] = d * scale_g * q - dmin * min_g
#include "engine/model_files/quant/block_decoders.h"
#include "engine/model_files/quant/k_scale_min.h"

namespace astrai::quant {

void decode_q4_k(std::span<const std::byte, 144> block, std::span<float, kQK_K> out) {
  decode_scale_min_groups(block, 16, std::nullopt, out);
}

}  // namespace astrai::quant
