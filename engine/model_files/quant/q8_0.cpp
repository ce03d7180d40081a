// Q8_0: 32 weights in 34 bytes (8.5 bits per weight), symmetric.
//
//   byte  0      2                        34
//        +------+------------------------+
//        | d    | qs[32]: int8, element j |
//        | f16  |                         |
//        +------+------------------------+
//
//   x[j] = d * qs[j]
#include "engine/model_files/quant/block_bytes.h"
#include "engine/model_files/quant/block_decoders.h"

namespace astrai::quant {

void decode_q8_0(std::span<const std::byte, 34> block, std::span<float, kQK> out) {
  const float d = half_at(block, 0);
  for (size_t j = 0; j < kQK; ++j) out[j] = d * float(int8_t(byte_at(block, 2 + j)));
}

}  // namespace astrai::quant
