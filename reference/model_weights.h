// The float32 weights of a Llama-architecture model, as the reference reads
// them. Every matrix is stored [out_features, in_features] row-major, so a
// linear layer computes y = x W^T (the layout of llama2.c and of GGUF, where
// ne[0] = in_features).
#pragma once

#include <cstdint>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "reference/model_config.h"

namespace astrai {

struct LayerWeights {
  xt::xtensor<float, 1> attn_norm;  // [dim]
  xt::xtensor<float, 2> wq;         // [n_heads * head_dim, dim]
  xt::xtensor<float, 2> wk;         // [n_kv_heads * head_dim, dim]
  xt::xtensor<float, 2> wv;         // [n_kv_heads * head_dim, dim]
  xt::xtensor<float, 2> wo;         // [dim, n_heads * head_dim]
  xt::xtensor<float, 1> ffn_norm;   // [dim]
  xt::xtensor<float, 2> w_gate;     // [hidden_dim, dim]   (llama2.c w1, GGUF ffn_gate)
  xt::xtensor<float, 2> w_down;     // [dim, hidden_dim]   (llama2.c w2, GGUF ffn_down)
  xt::xtensor<float, 2> w_up;       // [hidden_dim, dim]   (llama2.c w3, GGUF ffn_up)
  // Only when config.options.qkv_bias (Qwen 2), else empty:
  xt::xtensor<float, 1> bq;  // [n_heads * head_dim]
  xt::xtensor<float, 1> bk;  // [n_kv_heads * head_dim]
  xt::xtensor<float, 1> bv;  // [n_kv_heads * head_dim]
  // Only when config.options.qk_norm (Qwen 3), else empty: RMSNorm weights shared by all heads.
  xt::xtensor<float, 1> q_norm;  // [head_dim]
  xt::xtensor<float, 1> k_norm;  // [head_dim]
};

// How one tensor was stored in the file the weights were read from.
struct StoredTensor {
  std::string type;         // ggml's type name: "F32", "BF16", "Q8_0", "Q4_K", ...
  uint64_t file_bytes = 0;  // its size in the file
};

struct ModelWeights {
  ModelConfig config;
  xt::xtensor<float, 2> token_embedding;  // [vocab_size, dim]
  std::vector<LayerWeights> layers;       // n_layers
  xt::xtensor<float, 1> final_norm;       // [dim]
  xt::xtensor<float, 2> classifier;       // [vocab_size, dim] (a copy of the embedding when shared)
  // Each tensor's storage in its GGUF file, by tensor name ("blk.0.attn_q.weight");
  // empty for weights made in memory or read from another format. The
  // float32 tensors above are the stored ones decoded (an executor that
  // computes on quantized blocks reads the file through a ModelSource,
  // engine/model_files/model_source.h, instead).
  std::map<std::string, StoredTensor> stored;

  // Throws std::invalid_argument when a tensor's shape disagrees with config.
  void validate_shapes() const;
};

}  // namespace astrai
