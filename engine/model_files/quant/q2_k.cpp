// Q2_K: 256 weights in 84 bytes (2.625 bits per weight): 16 groups of 16,
// each with a 4-bit scale and a 4-bit minimum, both times a float16.
//
//   byte  0                16                         80     82     84
//        +----------------+--------------------------+------+------+
//        | scales[16]:    | qs[64]: four 2-bit       | d    | dmin |
//        | group g: low   | values per byte          | f16  | f16  |
//        | nibble scale,  |                          |      |      |
//        | high nibble min|                          |      |      |
//        +----------------+--------------------------+------+------+
//
// Element e (h = e / 128, s = (e % 128) / 32 the 2-bit shift, l = e % 32):
//   q = (qs[32 h + l] >> 2 s) & 3,  group g = e / 16
//   x[e] = d * (scales[g] & 15) * q - dmin * (scales[g] >> 4)
#include "engine/model_files/quant/block_bytes.h"
#include "engine/model_files/quant/block_decoders.h"

namespace astrai::quant {

void decode_q2_k(std::span<const std::byte, 84> block, std::span<float, kQK_K> out) {
  const float d = half_at(block, 80);
  const float dmin = half_at(block, 82);
  size_t e = 0;
  for (size_t half = 0; half < 2; ++half) {
    const size_t qs = 16 + 32 * half;
    for (int shift = 0; shift < 8; shift += 2) {
      for (size_t part = 0; part < 2; ++part) {  // 16 values from qs[l], then 16 from qs[l + 16]
        const uint8_t sc = byte_at(block, e / 16);
        const float scale = d * float(sc & 15);
        const float min = dmin * float(sc >> 4);
        for (size_t l = 0; l < 16; ++l, ++e) out[e] = scale * float((byte_at(block, qs + 16 * part + l) >> shift) & 3) - min;
      }
    }
  }
}

}  // namespace astrai::quant
