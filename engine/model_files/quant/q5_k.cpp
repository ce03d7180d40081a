// Q5_K: 256 weights in 176 bytes (5.5 bits per weight): Q4_K plus a fifth
// bit per weight.
//
//   byte  0      2      4                16               48               176
//        +------+------+----------------+----------------+----------------+
//        | d    | dmin | scales[12]     | qh[32]: bit g  | qs[128]: as    |
//        | f16  | f16  | (k_scale_min.h)| of qh[l] = bit | Q4_K's         |
//        |      |      |                | 4 of element   |                |
//        |      |      |                | 32 g + l       |                |
//        +------+------+----------------+----------------+----------------+
//
// Element e (c = e / 64, l = e % 32, group g = e / 32):
//   q = nibble (e % 64 < 32 ? low : high) of qs[32 c + l] + 16 * (bit g of qh[l])
//   x[e] = d * scale_g * q - dmin * min_g
#include "engine/model_files/quant/block_decoders.h"
#include "engine/model_files/quant/k_scale_min.h"

namespace astrai::quant {

void decode_q5_k(std::span<const std::byte, 176> block, std::span<float, kQK_K> out) {
  decode_scale_min_groups(block, 48, size_t(16), out);
}

}  // namespace astrai::quant
