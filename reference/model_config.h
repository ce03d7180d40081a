// The shape of a Llama-architecture model: everything the forward pass needs
// to know besides the weights themselves.
#pragma once

#include <string>

namespace astrai {

// How RoPE pairs up the dimensions of a head before rotating them.
//  - AdjacentPairs: (x[0], x[1]), (x[2], x[3]), ... as llama2.c and GGUF's
//    `llama` tensors use.
//  - RotateHalf: (x[i], x[i + head_dim/2]) as Hugging Face checkpoints use.
enum class RopeLayout { AdjacentPairs, RotateHalf };

// Llama 3.1's frequency-dependent RoPE scaling (config.json
// "rope_scaling": {"rope_type": "llama3", ...}; GGUF rope.scaling.*, with
// llama.cpp storing the resulting per-pair factors as rope_freqs.weight).
// Pairs whose wavelength is longer than original_context / low_freq_factor
// turn `factor` times slower, those shorter than original_context /
// high_freq_factor keep their frequency, those between are blended.
struct RopeScaling {
  float factor = 0.0f;  // 0: no scaling (every other field ignored)
  float low_freq_factor = 1.0f;
  float high_freq_factor = 4.0f;
  int original_context = 8192;  // original_max_position_embeddings

  bool enabled() const { return factor > 0.0f; }
};

// What a layer has beyond the Llama block: which of the weight table's
// optional rows a model stores, and what the forward pass does with them.
// Copied whole from an architecture's row (engine/model_files/architectures.h)
// into a model's config; adding an option is adding a field here.
struct LayerOptions {
  bool qkv_bias = false;  // Qwen 2 / 2.5: the q, k and v projections add a bias
  bool qk_norm = false;   // Qwen 3: RMSNorm of each head of q and of k (own weights) before RoPE

  bool operator==(const LayerOptions&) const = default;
};

struct ModelConfig {
  int dim = 0;          // width of the residual stream
  int hidden_dim = 0;   // width of the SwiGLU feed-forward layer
  int n_layers = 0;
  int n_heads = 0;      // query heads
  int n_kv_heads = 0;   // key/value heads (n_heads % n_kv_heads == 0: grouped-query attention)
  int vocab_size = 0;
  int max_seq_len = 0;  // context length
  float rope_theta = 10000.0f;
  float norm_eps = 1e-5f;
  RopeLayout rope_layout = RopeLayout::AdjacentPairs;
  RopeScaling rope_scaling{};
  // Width of one attention head; 0 means dim / n_heads. Qwen 3 sets its own
  // (config.json head_dim, GGUF attention.key_length), so q_dim() may differ from dim.
  int explicit_head_dim = 0;
  LayerOptions options{};

  int head_dim() const { return explicit_head_dim > 0 ? explicit_head_dim : dim / n_heads; }
  int kv_dim() const { return n_kv_heads * head_dim(); }
  int q_dim() const { return n_heads * head_dim(); }

  // Throws std::invalid_argument naming the first inconsistent field.
  void validate() const;
  // "dim=64 hidden=172 layers=5 heads=8 kv_heads=4 vocab=512 ctx=512"
  std::string describe() const;
};

}  // namespace astrai
