// One encoder per type AstrAI writes (`astrai convert --type`): float32
// weights -> one block, with llama.cpp's rounding rules (its reference
// quantizers, quantize_row_*_ref in ggml-quants.c, without an importance
// matrix), so that a file AstrAI quantizes holds the bytes llama-quantize
// would write. The layouts are drawn in the decoders' files (q8_0.cpp ...).
#pragma once

#include <cstddef>
#include <span>

#include "engine/model_files/quant/block_decoders.h"

namespace astrai::quant {

void encode_q8_0(std::span<const float, kQK> x, std::span<std::byte, 34> block);
void encode_q4_0(std::span<const float, kQK> x, std::span<std::byte, 18> block);
void encode_q4_k(std::span<const float, kQK_K> x, std::span<std::byte, 144> block);
void encode_q6_k(std::span<const float, kQK_K> x, std::span<std::byte, 210> block);

}  // namespace astrai::quant
