// float32 -> quantized ggml blocks, for the types AstrAI writes (Q8_0, Q4_0,
// Q4_K, Q6_K), with llama.cpp's rounding rules (block_encoders.h).
#pragma once

#include <cstddef>
#include <span>

#include "engine/model_files/gguf/gguf_types.h"

namespace astrai::quant {

bool can_quantize(GgmlType type);

// Encodes x, whole blocks of `type` (x.size() a multiple of its block size),
// into out (exactly the blocks' bytes); std::logic_error otherwise.
void quantize(GgmlType type, std::span<const float> x, std::span<std::byte> out);

}  // namespace astrai::quant
