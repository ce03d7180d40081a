// MXFP4 (the OCP Microscaling format's FP4): 32 weights share an E8M0 scale
// (a power of two, the byte e standing for 2^(e - 127)), each weight an E2M1
// nibble (sign, 2 exponent bits, 1 mantissa bit: 0, 0.5, 1, 1.5, 2, 3, 4, 6).
// gpt-oss ships its experts so, in two layouts of the same values:
//  - llama.cpp's GGUF type MXFP4 (block_mxfp4: e, then qs[16] whose low
//    nibble is element j and high nibble element j + 16): decode_mxfp4 in
//    block_decoders.h;
//  - transformers' safetensors (`*_blocks` [..., n / 32, 16] bytes whose low
//    nibble is element 2j and high nibble element 2j + 1, `*_scales` [..., n
//    / 32] bytes): decode_mxfp4_row below.
// A value is a small integer times a power of two, exact in float32
// (subnormal for the smallest scales), so both decoders give llama.cpp's and
// transformers' values bit for bit.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>

namespace astrai::quant {

// Twice the E2M1 values, indexed by the nibble (ggml's kvalues_mxfp4).
inline constexpr int8_t kMxfp4Doubled[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// The weight a nibble stands for under scale byte e: E2M1(nibble) * 2^(e - 127).
inline float mxfp4_value(uint8_t nibble, uint8_t e) {
  return std::ldexp(float(kMxfp4Doubled[nibble & 15]), int(e) - 128);
}

// One row of transformers' layout: `blocks` (n / 2 bytes) and `scales` (n / 32
// bytes) into n floats.
inline void decode_mxfp4_row(std::span<const std::byte> blocks, std::span<const std::byte> scales,
                             std::span<float> out) {
  for (size_t i = 0; i < out.size() / 2; ++i) {
    const auto b = std::to_integer<uint8_t>(blocks[i]);
    const auto e = std::to_integer<uint8_t>(scales[i / 16]);
    out[2 * i] = mxfp4_value(b & 15, e);
    out[2 * i + 1] = mxfp4_value(b >> 4, e);
  }
}

}  // namespace astrai::quant
