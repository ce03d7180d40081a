// The shape of a Llama-architecture model (dense, or with Mixture-of-Experts
// feed-forward layers): everything the forward pass needs to know besides
// the weights themselves.
#pragma once

#include <string>
#include <vector>

namespace astrai {

// How RoPE pairs up the dimensions of a head before rotating them.
//  - AdjacentPairs: (x[0], x[1]), (x[2], x[3]), ... as llama2.c and GGUF's
//    `llama` tensors use.
//  - RotateHalf: (x[i], x[i + head_dim/2]) as Hugging Face checkpoints use.
enum class RopeLayout { AdjacentPairs, RotateHalf };

// How RoPE frequencies are stretched for contexts longer than training's
// (config.json "rope_scaling": {"rope_type": ...}); the formulas are in
// reference/rope.h.
//  - Llama3 (Llama 3.1; GGUF rope.scaling.*, llama.cpp storing the per-pair
//    factors as rope_freqs.weight): pairs whose wavelength is longer than
//    original_context / low_freq_factor turn `factor` times slower, those
//    shorter than original_context / high_freq_factor keep their frequency,
//    those between are blended.
//  - Linear (Gemma 3's full-attention layers): every pair `factor` times slower.
//  - Yarn (gpt-oss; Peng et al. 2023): pairs that turn fewer than beta_slow
//    times in original_context positions are interpolated (`factor` times
//    slower), more than beta_fast times kept, a linear ramp between; cos and
//    sin are multiplied by an attention factor.
enum class RopeScalingKind { Llama3, Linear, Yarn };

struct RopeScaling {
  float factor = 0.0f;  // 0: no scaling (every other field ignored)
  float low_freq_factor = 1.0f;
  float high_freq_factor = 4.0f;
  int original_context = 8192;  // original_max_position_embeddings
  RopeScalingKind kind = RopeScalingKind::Llama3;
  // Yarn only (transformers' defaults):
  float beta_fast = 32.0f;
  float beta_slow = 1.0f;
  // Whether the ramp's ends are rounded to whole pairs (transformers'
  // `truncate`, default true; gpt-oss sets false).
  bool truncate = true;
  // What cos and sin are multiplied by; 0: transformers' default for the
  // factor, 0.1 ln(factor) + 1 (reference/rope.h rope_attention_factor).
  float attention_factor = 0.0f;

  bool enabled() const { return factor > 0.0f; }
  bool operator==(const RopeScaling&) const = default;
};

// What a layer has beyond the Llama block: which of the weight table's
// optional rows a model stores, and what the forward pass does with them.
// Copied whole from an architecture's row (engine/model_files/architectures.h)
// into a model's config; adding an option is adding a field here.
// Which module of a transformers checkpoint holds a sparse layer's router and
// experts (their names differ; the computation does not): Qwen 2 / 3 MoE's
// `mlp` (`mlp.gate`, `mlp.experts.E.gate_proj`), Mixtral's
// `block_sparse_moe` (`block_sparse_moe.gate`, `block_sparse_moe.experts.E.w1`),
// gpt-oss's `mlp` (`mlp.router`, one `mlp.experts.gate_up_proj` per layer).
enum class MoeModule { None, Mlp, BlockSparseMoe, GptOss };

struct LayerOptions {
  bool qkv_bias = false;  // Qwen 2 / 2.5: the q, k and v projections add a bias
  bool qk_norm = false;   // Qwen 3: RMSNorm of each head of q and of k (own weights) before RoPE
  // Mixture-of-Experts (ModelConfig::moe says which layers are sparse and
  // how they route): where the experts are stored, None for dense models.
  MoeModule moe = MoeModule::None;
  bool shared_expert = false;  // Qwen 2 MoE: every sparse layer adds a gated, always-on expert
  bool router_bias = false;    // gpt-oss: the router adds a bias to its scores
  // gpt-oss: each query head has a learned logit that joins its softmax's
  // denominator and gives no value ("attention sink"; weights `sinks`).
  bool attention_sinks = false;
  // Gemma 3's block (transformers' Gemma3DecoderLayer):
  //  - norm_unit_offset: every RMSNorm (q/k and final ones too) scales by
  //    (1 + w), its stored weight w being an offset from 1;
  //  - sandwich_norms: the attention and feed-forward outputs are RMSNormed
  //    (post_attn_norm, post_ffn_norm) before their residual adds;
  //  - gelu_tanh: the gated feed-forward's activation is tanh-approximated
  //    GELU (GeGLU, gelu_pytorch_tanh) instead of SiLU;
  //  - scaled_embedding: the embedding row is multiplied by sqrt(dim).
  bool norm_unit_offset = false;
  bool sandwich_norms = false;
  bool gelu_tanh = false;
  bool scaled_embedding = false;
  // gpt-oss (after Gemma's, so the architecture table's positional rows keep
  // their meaning):
  bool expert_biases = false;  // each expert's gate, up and down projections add a bias
  bool out_bias = false;       // the attention output projection adds a bias (o_proj.bias)

  bool operator==(const LayerOptions&) const = default;
};

// How a sparse layer turns its router's scores into expert weights.
//  - SoftmaxTopK (Qwen 2 / 3 MoE, Mixtral): p = softmax(scores) over all
//    experts, keep the k largest p; with norm_topk_prob they are divided by
//    their sum (Mixtral always does), else used as they are.
//  - TopKSoftmax (gpt-oss): keep the k largest scores, softmax over those k.
//    (Equal to SoftmaxTopK with norm_topk_prob, up to rounding.)
// Ties between equal scores go to the lower expert index (stable order).
enum class ExpertRouting { SoftmaxTopK, TopKSoftmax };

// The Mixture-of-Experts part of a config; n_experts == 0 for dense models.
struct MoeConfig {
  int n_experts = 0;          // experts per sparse layer (num_experts, num_local_experts)
  int n_experts_used = 0;     // k: experts each token runs (num_experts_per_tok)
  int expert_hidden_dim = 0;  // each expert's SwiGLU width (moe_intermediate_size)
  ExpertRouting routing = ExpertRouting::SoftmaxTopK;
  bool norm_topk_prob = false;
  int shared_expert_hidden_dim = 0;  // with LayerOptions::shared_expert (shared_expert_intermediate_size)
  // Which layers are sparse, as transformers' Qwen MoE decides: layer l is
  // sparse unless it is in dense_layers (mlp_only_layers), when
  // (l + 1) % sparse_step == 0 (decoder_sparse_step). The others are dense
  // SwiGLU layers of ModelConfig::hidden_dim.
  int sparse_step = 1;
  std::vector<int> dense_layers{};
  // gpt-oss (swiglu_limit): the experts' activation is clamped_swiglu()
  // (reference/swiglu.h) with this limit; 0: silu(gate) * up.
  float swiglu_limit = 0.0f;

  bool sparse(int layer) const;

  bool operator==(const MoeConfig&) const = default;
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
  MoeConfig moe{};
  // Sliding-window attention (Mistral, Gemma 3, gpt-oss). A sliding layer's
  // query at position p attends to positions p - sliding_window + 1 .. p,
  // the last `sliding_window` ones, its own included (transformers' mask:
  // kv_idx > q_idx - sliding_window; llama.cpp masks p - j >= n_swa: the same
  // edge). 0: no layer slides.
  int sliding_window = 0;
  // Which layers slide (config.json layer_types), one flag per layer; empty
  // with a window set: every layer does (Mistral).
  std::vector<bool> sliding_layers{};
  // Gemma 3: sliding layers rotate with this base and no scaling
  // (rope_local_base_freq; GGUF rope.freq_base_swa), full layers with
  // rope_theta and rope_scaling. 0: every layer uses rope_theta and rope_scaling.
  float sliding_rope_theta = 0.0f;
  // Gemma: attention scores are scaled by 1 / sqrt(query_pre_attn_scalar)
  // instead of 1 / sqrt(head_dim) (0: head_dim).
  float query_pre_attn_scalar = 0.0f;
  // Gemma 2 / 3 (final_logit_softcapping): logits = cap tanh(logits / cap); 0: none.
  float final_logit_softcap = 0.0f;

  // Whether `layer` attends over a window, and the window (0: everything).
  bool sliding(int layer) const;
  int window(int layer) const { return sliding(layer) ? sliding_window : 0; }

  int head_dim() const { return explicit_head_dim > 0 ? explicit_head_dim : dim / n_heads; }
  int kv_dim() const { return n_kv_heads * head_dim(); }
  int q_dim() const { return n_heads * head_dim(); }
  // What q.k is multiplied by: 1 / sqrt(query_pre_attn_scalar, else head_dim), in float.
  float attention_scale() const;

  // Throws std::invalid_argument naming the first inconsistent field.
  void validate() const;
  // "dim=64 hidden=172 layers=5 heads=8 kv_heads=4 vocab=512 ctx=512"
  std::string describe() const;
};

}  // namespace astrai
