#include "reference/model_config.h"

#include <sstream>
#include <stdexcept>

namespace astrai {

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
    if (!(rope_scaling.factor >= 1.0f)) fail("rope_scaling.factor must be at least 1");
    if (!(rope_scaling.low_freq_factor > 0.0f) || !(rope_scaling.high_freq_factor > rope_scaling.low_freq_factor))
      fail("rope_scaling needs 0 < low_freq_factor < high_freq_factor");
    if (rope_scaling.original_context <= 0) fail("rope_scaling.original_context must be positive");
  } else if (!(rope_scaling.factor == 0.0f)) {
    fail("rope_scaling.factor must be 0 (off) or at least 1");
  }
}

std::string ModelConfig::describe() const {
  std::ostringstream out;
  out << "dim=" << dim << " hidden=" << hidden_dim << " layers=" << n_layers << " heads=" << n_heads
      << " kv_heads=" << n_kv_heads << " vocab=" << vocab_size << " ctx=" << max_seq_len;
  if (explicit_head_dim > 0) out << " head_dim=" << explicit_head_dim;
  if (options.qkv_bias) out << " qkv_bias";
  if (options.qk_norm) out << " qk_norm";
  if (rope_scaling.enabled()) out << " rope_scaling=llama3x" << rope_scaling.factor;
  return out.str();
}

}  // namespace astrai
