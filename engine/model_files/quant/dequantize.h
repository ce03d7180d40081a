// Quantized GGUF tensors (llama.cpp's Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, the K
// quants Q2_K ... Q6_K, and IQ4_NL, the type llama.cpp falls back to for
// Q2_K / Q3_K tensors whose rows are not a multiple of 256, and MXFP4,
// gpt-oss's experts) decoded to
// float32, the way a model is loaded for the reference and for the device
// (which rounds the float32 values to bf16 when it stores bf16).
#pragma once

#include <cstddef>
#include <span>

#include "engine/model_files/gguf/gguf_types.h"

namespace astrai::quant {

// True for the quantized types dequantize() decodes (not F32/F16/BF16,
// which the reader converts itself).
bool can_dequantize(GgmlType type);

// Decodes whole blocks of `type` into out: blocks.size() must be a multiple
// of the type's block bytes and out.size() the matching element count
// (std::logic_error otherwise, or for a type can_dequantize refuses).
void dequantize(GgmlType type, std::span<const std::byte> blocks, std::span<float> out);

}  // namespace astrai::quant
