// Q6_K: 256 weights in 210 bytes (6.5625 bits per weight): 16 groups of 16,
// each with a signed 8-bit scale; values are 6-bit, -32..31, no minimum.
//
//   byte  0                    128              192             208    210
//        +--------------------+----------------+---------------+------+
//        | ql[128]: low four  | qh[64]: high   | scales[16]:   | d    |
//        | bits, two values   | two bits, four | int8          | f16  |
//        | per byte           | values per byte|               |      |
//        +--------------------+----------------+---------------+------+
//
// Element e (h = e / 128, k = (e % 128) / 32, l = e % 32, group g = e / 16):
//   low  = nibble (k < 2 ? low : high) of ql[64 h + 32 (k % 2) + l]
//   high = (qh[32 h + l] >> 2 k) & 3
//   x[e] = d * scales[g] * ((low | high << 4) - 32)
#include "engine/model_files/quant/block_bytes.h"
#include "engine/model_files/quant/block_decoders.h"

namespace astrai::quant {

void decode_q6_k(std::span<const std::byte, 210> block, std::span<float, kQK_K> out) {
  const float d = half_at(block, 208);
  for (size_t e = 0; e < kQK_K; ++e) {
    const size_t h = e / 128, k = (e % 128) / 32, l = e % 32;
    const int low = (byte_at(block, 64 * h + 32 * (k % 2) + l) >> (4 * (k / 2))) & 15;
    const int high = (byte_at(block, 128 + 32 * h + l) >> (2 * k)) & 3;
    const float scale = d * float(int8_t(byte_at(block, 192 + e / 16)));
    out[e] = scale * float((low | high << 4) - 32);
  }
}

}  // namespace astrai::quant
