// 16-bit float formats that GGUF stores tensors in, converted to and from
// float32 bit by bit (no reliance on compiler _Float16 support):
//  - IEEE 754 binary16 ("half", ggml F16): 1 sign, 5 exponent (bias 15), 10 mantissa bits.
//  - bfloat16 (ggml BF16): the top 16 bits of a float32: 1 sign, 8 exponent, 7 mantissa bits.
// float -> 16-bit rounds to nearest, ties to even; values beyond the largest
// finite half round to infinity; NaN stays NaN (made quiet, sign kept).
// 16-bit -> float is exact.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace astrai {

// The float encodings model files store whole tensors in (GGUF's and
// safetensors' F32, F16 and BF16), little-endian.
enum class FloatEncoding { F32, F16, BF16 };

// Decodes `bytes` (4 or 2 per value, as `encoding` says) into `out`, exactly.
// Throws std::logic_error when the sizes disagree. Both model file readers
// decode through it.
void decode_floats(FloatEncoding encoding, std::span<const std::byte> bytes, std::span<float> out);

uint16_t float_to_half(float value);
float half_to_float(uint16_t bits);

uint16_t float_to_bf16(float value);
float bf16_to_float(uint16_t bits);

}  // namespace astrai
