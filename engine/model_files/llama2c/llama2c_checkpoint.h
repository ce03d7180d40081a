// llama2.c's legacy checkpoint format (the .bin files of run.c, e.g.
// stories260K.bin). Layout, all little-endian:
//   int32 dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len
//     (vocab_size < 0: the classifier is not shared and is stored at the end)
//   float32 token_embedding[vocab][dim]
//   float32 rms_att[L][dim], wq[L][dim][dim], wk[L][kv_dim][dim], wv[L][kv_dim][dim],
//           wo[L][dim][dim], rms_ffn[L][dim], w1[L][hidden][dim], w2[L][dim][hidden],
//           w3[L][hidden][dim], rms_final[dim]
//   float32 freq_cis_real[seq_len][head_size/2], freq_cis_imag[...]  (unused, skipped)
//   float32 wcls[vocab][dim]  (only when vocab_size was negative)
// with head_size = dim / n_heads and kv_dim = n_kv_heads * head_size.
#pragma once

#include <cstdint>
#include <string>

#include "reference/model_weights.h"

namespace astrai {

// What a checkpoint header says: the model config (RoPE theta 10000, RMSNorm
// eps 1e-5, adjacent-pair RoPE, as run.c uses) and the classifier layout.
struct Llama2cHeader {
  ModelConfig config;
  bool shared_classifier = true;
};

// Reads and validates the 28-byte header. Throws std::runtime_error naming
// the file for a short file or an invalid configuration.
Llama2cHeader read_llama2c_header(const std::string& path);

// The exact size in bytes of a checkpoint with this header (throws
// std::runtime_error when it overflows 64 bits).
uint64_t llama2c_file_size(const Llama2cHeader& header);

// Loads all weights (w1 -> w_gate, w2 -> w_down, w3 -> w_up; a shared
// classifier becomes a copy of the embedding). Throws std::runtime_error when
// the file size differs from llama2c_file_size(header), naming both sizes.
ModelWeights load_llama2c_checkpoint(const std::string& path);

}  // namespace astrai
