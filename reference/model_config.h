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

  int head_dim() const { return dim / n_heads; }
  int kv_dim() const { return n_kv_heads * head_dim(); }
  int q_dim() const { return n_heads * head_dim(); }

  // Throws std::invalid_argument naming the first inconsistent field.
  void validate() const;
  // "dim=64 hidden=172 layers=5 heads=8 kv_heads=4 vocab=512 ctx=512"
  std::string describe() const;
};

}  // namespace astrai
