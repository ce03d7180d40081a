// 16-bit float formats that GGUF stores tensors in, converted to and from
// float32 bit by bit (no reliance on compiler _Float16 support):
//  - IEEE 754 binary16 ("half", ggml F16): 1 sign, 5 exponent (bias 15), 10 mantissa bits.
//  - bfloat16 (ggml BF16): the top 16 bits of a float32: 1 sign, 8 exponent, 7 mantissa bits.
// float -> 16-bit rounds to nearest, ties to even; values beyond the largest
// finite half round to infinity; NaN stays NaN (made quiet, sign kept).
// 16-bit -> float is exact.
#pragma once

#include <cstdint>

namespace astrai {

uint16_t float_to_half(float value);
float half_to_float(uint16_t bits);

uint16_t float_to_bf16(float value);
float bf16_to_float(uint16_t bits);

}  // namespace astrai
