// One decoder per quantized ggml type: a block of the file's bytes -> its
// float32 values, in the element order of the tensor row. Each decoder's file
// draws its block layout (ggml-common.h's block_* structs) and its formula
// (ggml-quants.c's dequantize_row_*), written here from those layouts.
//
// Every formula multiplies a float16 scale by small integers (at most 24
// significant bits in all), which float32 holds exactly, and then rounds once
// (a subtraction or addition of a float16-times-integer minimum): the result
// is the exact value rounded to float32, whatever the order of the exact
// multiplications. llama.cpp evaluates the same expressions, so these are
// its values bit for bit.
#pragma once

#include <cstddef>
#include <span>

namespace astrai::quant {

inline constexpr size_t kQK = 32;    // elements in a Q4_0 ... Q8_0, IQ4_NL block
inline constexpr size_t kQK_K = 256; // elements in a K-quant super-block

void decode_q4_0(std::span<const std::byte, 18> block, std::span<float, kQK> out);
void decode_q4_1(std::span<const std::byte, 20> block, std::span<float, kQK> out);
void decode_q5_0(std::span<const std::byte, 22> block, std::span<float, kQK> out);
void decode_q5_1(std::span<const std::byte, 24> block, std::span<float, kQK> out);
void decode_q8_0(std::span<const std::byte, 34> block, std::span<float, kQK> out);
void decode_iq4_nl(std::span<const std::byte, 18> block, std::span<float, kQK> out);
void decode_mxfp4(std::span<const std::byte, 17> block, std::span<float, kQK> out);
void decode_q2_k(std::span<const std::byte, 84> block, std::span<float, kQK_K> out);
void decode_q3_k(std::span<const std::byte, 110> block, std::span<float, kQK_K> out);
void decode_q4_k(std::span<const std::byte, 144> block, std::span<float, kQK_K> out);
void decode_q5_k(std::span<const std::byte, 176> block, std::span<float, kQK_K> out);
void decode_q6_k(std::span<const std::byte, 210> block, std::span<float, kQK_K> out);

}  // namespace astrai::quant
