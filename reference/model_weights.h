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

// Norm weights are stored as the file has them: with norm_unit_offset
// (Gemma) the norm scales by 1 + w (GGUF files hold 1 + w; the reader
// subtracts the 1).
struct LayerWeights {
  xt::xtensor<float, 1> attn_norm;  // [dim]
  xt::xtensor<float, 2> wq;         // [n_heads * head_dim, dim]
  xt::xtensor<float, 2> wk;         // [n_kv_heads * head_dim, dim]
  xt::xtensor<float, 2> wv;         // [n_kv_heads * head_dim, dim]
  xt::xtensor<float, 2> wo;         // [dim, n_heads * head_dim]
  xt::xtensor<float, 1> ffn_norm;   // [dim]
  // Dense layers (all of a dense model's; config.moe.sparse(l) false), else empty:
  xt::xtensor<float, 2> w_gate;     // [hidden_dim, dim]   (llama2.c w1, GGUF ffn_gate)
  xt::xtensor<float, 2> w_down;     // [dim, hidden_dim]   (llama2.c w2, GGUF ffn_down)
  xt::xtensor<float, 2> w_up;       // [hidden_dim, dim]   (llama2.c w3, GGUF ffn_up)
  // Sparse layers (config.moe.sparse(l)), else empty: the router and the
  // experts stacked on a leading axis, each expert a SwiGLU of
  // E_h = moe.expert_hidden_dim (GGUF's ffn_*_exps layout).
  xt::xtensor<float, 2> router;       // [n_experts, dim]        (GGUF ffn_gate_inp)
  xt::xtensor<float, 1> router_bias;  // [n_experts]             (options.router_bias only)
  xt::xtensor<float, 3> exp_gate;     // [n_experts, E_h, dim]   (GGUF ffn_gate_exps)
  xt::xtensor<float, 3> exp_up;       // [n_experts, E_h, dim]   (GGUF ffn_up_exps)
  xt::xtensor<float, 3> exp_down;     // [n_experts, dim, E_h]   (GGUF ffn_down_exps)
  // Sparse layers with options.expert_biases (gpt-oss), else empty:
  xt::xtensor<float, 2> exp_gate_bias;  // [n_experts, E_h]  (GGUF ffn_gate_exps.bias)
  xt::xtensor<float, 2> exp_up_bias;    // [n_experts, E_h]  (GGUF ffn_up_exps.bias)
  xt::xtensor<float, 2> exp_down_bias;  // [n_experts, dim]  (GGUF ffn_down_exps.bias)
  // Sparse layers with options.shared_expert, else empty: an always-on SwiGLU
  // of S_h = moe.shared_expert_hidden_dim, scaled by sigmoid(shexp_gate_inp x).
  xt::xtensor<float, 2> shexp_gate_inp;  // [1, dim]    (GGUF ffn_gate_inp_shexp)
  xt::xtensor<float, 2> shexp_gate;      // [S_h, dim]  (GGUF ffn_gate_shexp)
  xt::xtensor<float, 2> shexp_up;        // [S_h, dim]  (GGUF ffn_up_shexp)
  xt::xtensor<float, 2> shexp_down;      // [dim, S_h]  (GGUF ffn_down_shexp)
  // Only when config.options.qkv_bias (Qwen 2), else empty:
  xt::xtensor<float, 1> bq;  // [n_heads * head_dim]
  xt::xtensor<float, 1> bk;  // [n_kv_heads * head_dim]
  xt::xtensor<float, 1> bv;  // [n_kv_heads * head_dim]
  // Only when config.options.out_bias (gpt-oss), else empty:
  xt::xtensor<float, 1> bo;  // [dim]  (GGUF attn_output.bias)
  // Only when config.options.qk_norm (Qwen 3), else empty: RMSNorm weights shared by all heads.
  xt::xtensor<float, 1> q_norm;  // [head_dim]
  xt::xtensor<float, 1> k_norm;  // [head_dim]
  // Only when config.options.attention_sinks (gpt-oss), else empty: each
  // query head's sink logit (reference/attention.h).
  xt::xtensor<float, 1> sinks;  // [n_heads]
  // Only when config.options.sandwich_norms (Gemma 3), else empty: the
  // RMSNorms of the attention and feed-forward outputs.
  xt::xtensor<float, 1> post_attn_norm;  // [dim]   (GGUF post_attention_norm)
  xt::xtensor<float, 1> post_ffn_norm;   // [dim]   (GGUF post_ffw_norm)
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
