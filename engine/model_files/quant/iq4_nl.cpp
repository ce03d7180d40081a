// IQ4_NL: 32 weights in 18 bytes (4.5 bits per weight): Q4_0's layout, but a
// nibble indexes a fixed non-linear table instead of being the value - 8.
// llama.cpp writes it for Q2_K and Q3_K tensors whose rows are not a
// multiple of 256 (Q2_K / Q3_K presets on small models).
//
//   byte  0      2                                   18
//        +------+-----------------------------------+
//        | d    | qs[16]: low nibble of qs[j] is    |
//        | f16  | element j, high nibble j + 16      |
//        +------+-----------------------------------+
//
//   x[j] = d * kValues[qs[j] & 15],  x[j + 16] = d * kValues[qs[j] >> 4]
#include <array>

#include "engine/model_files/quant/block_bytes.h"
#include "engine/model_files/quant/block_decoders.h"

namespace astrai::quant {
namespace {

// ggml's kvalues_iq4nl: a 16-level grid denser near zero.
constexpr std::array<int8_t, 16> kValues = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

}  // namespace

void decode_iq4_nl(std::span<const std::byte, 18> block, std::span<float, kQK> out) {
  const float d = half_at(block, 0);
  for (size_t j = 0; j < 16; ++j) {
    const uint8_t q = byte_at(block, 2 + j);
    out[j] = d * float(kValues[q & 15]);
    out[j + 16] = d * float(kValues[q >> 4]);
  }
}

}  // namespace astrai::quant
