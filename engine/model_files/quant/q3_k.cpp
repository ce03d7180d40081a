// Q3_K: 256 weights in 110 bytes (3.4375 bits per weight): 16 groups of 16,
// each with a signed 6-bit scale; values are 3-bit, -4..3, no minimum.
//
//   byte  0              32                     96            108    110
//        +--------------+----------------------+-------------+------+
//        | hmask[32]:   | qs[64]: the low two  | scales[12]: | d    |
//        | bit 2 of each| bits, four values    | 16 six-bit  | f16  |
//        | value        | per byte             | scales      |      |
//        +--------------+----------------------+-------------+------+
//
// Element e (h = e / 128, s = (e % 128) / 32, l = e % 32, group g = e / 16):
//   low  = (qs[32 h + l] >> 2 s) & 3
//   high = bit (4 h + s) of hmask[l]; a CLEAR bit subtracts 4
//   q = low - (high ? 0 : 4)                                  (-4 .. 3)
//   scale g: low 4 bits = g < 8 ? scales[g] & 15 : scales[g - 8] >> 4,
//            high 2 bits = (scales[8 + g % 4] >> 2 (g / 4)) & 3;  minus 32
//   x[e] = d * (scale_g - 32) * q
#include "engine/model_files/quant/block_bytes.h"
#include "engine/model_files/quant/block_decoders.h"

namespace astrai::quant {
namespace {

int q3_k_scale(std::span<const std::byte, 110> block, size_t g) {
  const size_t s = 96;  // scales[0]
  const int low = g < 8 ? byte_at(block, s + g) & 15 : byte_at(block, s + g - 8) >> 4;
  const int high = (byte_at(block, s + 8 + g % 4) >> (2 * (g / 4))) & 3;
  return (low | high << 4) - 32;
}

}  // namespace

void decode_q3_k(std::span<const std::byte, 110> block, std::span<float, kQK_K> out) {
  const float d = half_at(block, 108);
  size_t e = 0;
  for (size_t half = 0; half < 2; ++half) {
    const size_t qs = 32 + 32 * half;
    for (int shift = 0; shift < 4; ++shift) {
      const int hbit = int(4 * half) + shift;
      for (size_t part = 0; part < 2; ++part) {
        const float scale = d * float(q3_k_scale(block, e / 16));
        for (size_t l = 16 * part; l < 16 * part + 16; ++l, ++e) {
          const int low = (byte_at(block, qs + l) >> (2 * shift)) & 3;
          const int high = (byte_at(block, l) >> hbit) & 1;
          out[e] = scale * float(low - (high ? 0 : 4));
        }
      }
    }
  }
}

}  // namespace astrai::quant
