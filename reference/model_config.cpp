#include "reference/model_config.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace astrai {

bool MoeConfig::sparse(int layer) const {
  return n_experts > 0 && sparse_step > 0 && (layer + 1) % sparse_step == 0 &&
         std::find(dense_layers.begin(), dense_layers.end(), layer) == dense_layers.end();
}

bool ModelConfig::sliding(int layer) const {
  if (sliding_window <= 0) return false;
  return sliding_layers.empty() || (layer >= 0 && size_t(layer) < sliding_layers.size() && sliding_layers[size_t(layer)]);
}

float ModelConfig::attention_scale() const {
  return 1.0f / std::sqrt(query_pre_attn_scalar > 0.0f ? query_pre_attn_scalar : float(head_dim()));
}

void ModelConfig::validate() const {
  auto fail = [](const std::string& what) { throw std::invalid_argument("invalid model config: " + what); };
  if (dim <= 0) fail("dim must be positive");
  if (hidden_dim <= 0) fail("hidden_dim must be positive");
  if (n_layers <= 0) fail("n_layers must be positive");
  if (n_heads <= 0) fail("n_heads must be positive");
  if (n_kv_heads <= 0) fail("n_kv_heads must be positive");
  if (vocab_size <= 0) fail("vocab_size must be positive");
  if (max_seq_len <= 0) fail("max_seq_len must be positive");
  if (explicit_head_dim < 0) fail("explicit_head_dim must not be negative");
  if (explicit_head_dim == 0 && dim % n_heads != 0) fail("dim is not a multiple of n_heads");
  if (n_heads % n_kv_heads != 0) fail("n_heads is not a multiple of n_kv_heads");
  if (head_dim() % 2 != 0) fail("head_dim must be even for RoPE");
  if (!(rope_theta > 0.0f)) fail("rope_theta must be positive");
  if (!(norm_eps > 0.0f)) fail("norm_eps must be positive");
  if (rope_scaling.enabled()) {
    const RopeScaling& s = rope_scaling;
    if (!(s.factor >= 1.0f)) fail("rope_scaling.factor must be at least 1");
    if (s.kind == RopeScalingKind::Llama3 && (!(s.low_freq_factor > 0.0f) || !(s.high_freq_factor > s.low_freq_factor)))
      fail("rope_scaling needs 0 < low_freq_factor < high_freq_factor");
    if (s.original_context <= 0) fail("rope_scaling.original_context must be positive");
    if (s.kind == RopeScalingKind::Yarn && (!(s.beta_slow > 0.0f) || !(s.beta_fast > s.beta_slow)))
      fail("YaRN rope_scaling needs 0 < beta_slow < beta_fast");
    if (!(s.attention_factor >= 0.0f)) fail("rope_scaling.attention_factor must not be negative");
  } else if (!(rope_scaling.factor == 0.0f)) {
    fail("rope_scaling.factor must be 0 (off) or at least 1");
  }
  if (sliding_window < 0) fail("sliding_window must not be negative");
  if (!sliding_layers.empty() && sliding_layers.size() != size_t(n_layers))
    fail("sliding_layers has " + std::to_string(sliding_layers.size()) + " entries for " + std::to_string(n_layers) +
         " layers");
  if (!sliding_layers.empty() && sliding_window == 0) fail("sliding_layers is set without a sliding_window");
  if (sliding_rope_theta < 0.0f || (sliding_rope_theta > 0.0f && sliding_window == 0))
    fail("sliding_rope_theta needs a sliding_window (and must be positive)");
  if (!(query_pre_attn_scalar >= 0.0f)) fail("query_pre_attn_scalar must not be negative");
  if (!(final_logit_softcap >= 0.0f)) fail("final_logit_softcap must not be negative");
  const bool has_experts = moe.n_experts > 0;
  if (moe.n_experts < 0) fail("moe.n_experts must not be negative");
  if (has_experts != (options.moe != MoeModule::None))
    fail(has_experts ? "moe.n_experts is set but the layer options name no expert module"
                     : "the layer options name an expert module but moe.n_experts is 0");
  if (!has_experts && (options.shared_expert || options.router_bias || options.expert_biases))
    fail("a shared expert, a router bias or expert biases need experts (moe.n_experts > 0)");
  if (!(moe.swiglu_limit >= 0.0f)) fail("moe.swiglu_limit must not be negative");
  if (!has_experts && moe.swiglu_limit > 0.0f) fail("moe.swiglu_limit needs experts (moe.n_experts > 0)");
  if (has_experts && (options.sandwich_norms || options.gelu_tanh))
    fail("Gemma's sandwich norms and GeGLU are dense-only (no expert module has them)");
  if (has_experts) {
    if (moe.n_experts_used < 1 || moe.n_experts_used > moe.n_experts)
      fail("moe.n_experts_used (" + std::to_string(moe.n_experts_used) + ") must lie in [1, n_experts = " +
           std::to_string(moe.n_experts) + "]");
    if (moe.expert_hidden_dim <= 0) fail("moe.expert_hidden_dim must be positive");
    if (moe.sparse_step < 1) fail("moe.sparse_step must be at least 1");
    for (int l : moe.dense_layers)
      if (l < 0 || l >= n_layers) fail("moe.dense_layers names layer " + std::to_string(l) + " of " + std::to_string(n_layers));
  }
  if (options.shared_expert != (moe.shared_expert_hidden_dim > 0))
    fail(options.shared_expert ? "a shared expert needs moe.shared_expert_hidden_dim > 0"
                               : "moe.shared_expert_hidden_dim is set without a shared expert");
}

std::string ModelConfig::describe() const {
  std::ostringstream out;
  out << "dim=" << dim << " hidden=" << hidden_dim << " layers=" << n_layers << " heads=" << n_heads
      << " kv_heads=" << n_kv_heads << " vocab=" << vocab_size << " ctx=" << max_seq_len;
  if (explicit_head_dim > 0) out << " head_dim=" << explicit_head_dim;
  if (options.qkv_bias) out << " qkv_bias";
  if (options.qk_norm) out << " qk_norm";
  if (options.out_bias) out << " out_bias";
  if (rope_scaling.enabled()) {
    const char* kinds[] = {"llama3", "linear", "yarn"};
    out << " rope_scaling=" << kinds[int(rope_scaling.kind)] << "x" << rope_scaling.factor;
  }
  if (sliding_window > 0) {
    out << " window=" << sliding_window;
    if (!sliding_layers.empty()) {
      out << " sliding_layers=";
      for (bool s : sliding_layers) out << (s ? 'S' : 'F');
    }
    if (sliding_rope_theta > 0.0f) out << " sliding_rope_theta=" << sliding_rope_theta;
  }
  if (options.attention_sinks) out << " sinks";
  if (options.norm_unit_offset) out << " norm_1+w";
  if (options.sandwich_norms) out << " sandwich_norms";
  if (options.gelu_tanh) out << " geglu";
  if (options.scaled_embedding) out << " scaled_embedding";
  if (query_pre_attn_scalar > 0.0f) out << " query_pre_attn_scalar=" << query_pre_attn_scalar;
  if (final_logit_softcap > 0.0f) out << " final_softcap=" << final_logit_softcap;
  if (moe.n_experts > 0) {
    out << " experts=" << moe.n_experts << " top_k=" << moe.n_experts_used << " expert_hidden=" << moe.expert_hidden_dim
        << (moe.routing == ExpertRouting::TopKSoftmax ? " topk_softmax" : moe.norm_topk_prob ? " norm_topk" : "");
    if (moe.shared_expert_hidden_dim > 0) out << " shared_expert=" << moe.shared_expert_hidden_dim;
    if (options.router_bias) out << " router_bias";
    if (options.expert_biases) out << " expert_biases";
    if (moe.swiglu_limit > 0.0f) out << " swiglu_limit=" << moe.swiglu_limit;
    if (moe.sparse_step != 1) out << " sparse_step=" << moe.sparse_step;
    for (size_t i = 0; i < moe.dense_layers.size(); ++i) out << (i ? "," : " dense_layers=") << moe.dense_layers[i];
  }
  return out.str();
}

}  // namespace astrai
