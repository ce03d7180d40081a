// How the reference decode steps' matrices are stored: bf16, or in the
// per-matrix formats llama.cpp's quantizer gives a Llama-3-8B file for a
// preset (so the step reads the bytes a user's downloaded GGUF holds).
// tests/cuda/test_perf_report.cpp checks matrix_format() against the types
// llama.cpp's own quantizer writes.
#pragma once

#include <optional>
#include <string>

#include "cuda/quant_format.h"

namespace astrai::cuda::perf {

enum class Weights { BF16, Q8_0, Q4_K_M };

std::string weights_name(Weights w);  // "bf16", "Q8_0", "Q4_K_M"

// A layer's matrices, by their GGUF tensors (attn_q, attn_k, attn_v,
// attn_output, ffn_gate, ffn_up, ffn_down), the classifier (output) and the
// token embedding (token_embd: a gather reads its rows, decoding them when
// they are quantized).
enum class Matrix { Q, K, V, O, Gate, Up, Down, Classifier, Embedding };

// The format of matrix m of layer `layer` (0-based, of `layers`) in a file
// of preset w; nullopt: bf16. The classifier ignores `layer`.
std::optional<QuantFormat> matrix_format(Weights w, Matrix m, int layer, int layers);

// Bytes of a [rows, cols] matrix in `format` (nullopt: bf16, 2 bytes a weight).
double matrix_bytes(std::optional<QuantFormat> format, int rows, int cols);

}  // namespace astrai::cuda::perf
