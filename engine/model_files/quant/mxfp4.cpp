// MXFP4 as llama.cpp's GGUF stores it (see mxfp4.h): 32 weights in 17 bytes
// (4.25 bits per weight).
//
//   byte  0   1                                    17
//        +---+------------------------------------+
//        | e | qs[16]: low nibble of qs[j] is     |
//        |   | element j, high nibble j + 16       |
//        +---+------------------------------------+
//
//   x[j] = E2M1(qs[j] & 15) 2^(e - 127),  x[j + 16] = E2M1(qs[j] >> 4) 2^(e - 127)
#include "engine/model_files/quant/block_bytes.h"
#include "engine/model_files/quant/block_decoders.h"
#include "engine/model_files/quant/mxfp4.h"

namespace astrai::quant {

void decode_mxfp4(std::span<const std::byte, 17> block, std::span<float, kQK> out) {
  const uint8_t e = byte_at(block, 0);
  for (size_t j = 0; j < 16; ++j) {
    const uint8_t q = byte_at(block, 1 + j);
    out[j] = mxfp4_value(q & 15, e);
    out[j + 16] = mxfp4_value(q >> 4, e);
  }
}

}  // namespace astrai::quant
