// Comparisons of loaded models for the model-file tests: weights equal bit for
// bit (optionally after rounding the matrices to a 16-bit format, computed
// element by element here), tokenizers equal piece for piece.
#pragma once

#include <bit>
#include <cstdint>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>

#include "engine/model_files/float_formats.h"
#include "engine/model_files/gguf/gguf_model.h"
#include "engine/tokenizer/tokenizer.h"
#include "reference/model_weights.h"

namespace astrai::test {

// x as stored by a file of `dtype` and read back: float32 unchanged, or
// rounded to binary16 / bfloat16.
inline float stored_value(float x, GgufDType dtype) {
  switch (dtype) {
    case GgufDType::F16: return half_to_float(float_to_half(x));
    case GgufDType::BF16: return bf16_to_float(float_to_bf16(x));
    case GgufDType::F32: break;
    case GgufDType::Q8_0: case GgufDType::Q4_0: case GgufDType::Q4_K: case GgufDType::Q6_K:
      throw std::logic_error("stored_value: a quantized type is not rounded element by element");
  }
  return x;
}

// "" when every element of got has the bits of expect(original element), else
// a description of the first difference.
template <class Tensor>
std::string compare_tensor(const std::string& name, const Tensor& got, const Tensor& original,
                           const std::function<float(float)>& expect) {
  if (got.shape() != original.shape()) return name + ": shapes differ";
  for (size_t i = 0; i < got.size(); ++i) {
    const float want = expect(original.data()[i]);
    if (std::bit_cast<uint32_t>(got.data()[i]) != std::bit_cast<uint32_t>(want)) {
      std::ostringstream s;
      s << name << "[" << i << "]: got " << got.data()[i] << ", expected " << want << " (from " << original.data()[i]
        << ")";
      return s.str();
    }
  }
  return "";
}

// "" when `got` equals `original` written with matrices as `dtype` (norm
// weights are always float32), else the first difference.
inline std::string compare_weights(const ModelWeights& got, const ModelWeights& original, GgufDType dtype) {
  const auto& a = got.config;
  const auto& b = original.config;
  if (a.dim != b.dim || a.hidden_dim != b.hidden_dim || a.n_layers != b.n_layers || a.n_heads != b.n_heads ||
      a.n_kv_heads != b.n_kv_heads || a.vocab_size != b.vocab_size || a.max_seq_len != b.max_seq_len ||
      a.rope_theta != b.rope_theta || a.norm_eps != b.norm_eps || a.rope_layout != b.rope_layout)
    return "config differs: " + a.describe() + " vs " + b.describe();
  const std::function<float(float)> matrix = [dtype](float x) { return stored_value(x, dtype); };
  const std::function<float(float)> exact = [](float x) { return x; };
  std::string diff = compare_tensor("token_embedding", got.token_embedding, original.token_embedding, matrix);
  for (size_t l = 0; diff.empty() && l < got.layers.size(); ++l) {
    const auto& g = got.layers[l];
    const auto& o = original.layers[l];
    const std::string p = "layer " + std::to_string(l) + " ";
    for (const auto& d : {compare_tensor(p + "attn_norm", g.attn_norm, o.attn_norm, exact),
                          compare_tensor(p + "wq", g.wq, o.wq, matrix), compare_tensor(p + "wk", g.wk, o.wk, matrix),
                          compare_tensor(p + "wv", g.wv, o.wv, matrix), compare_tensor(p + "wo", g.wo, o.wo, matrix),
                          compare_tensor(p + "ffn_norm", g.ffn_norm, o.ffn_norm, exact),
                          compare_tensor(p + "w_gate", g.w_gate, o.w_gate, matrix),
                          compare_tensor(p + "w_down", g.w_down, o.w_down, matrix),
                          compare_tensor(p + "w_up", g.w_up, o.w_up, matrix)})
      if (diff.empty()) diff = d;
  }
  if (diff.empty()) diff = compare_tensor("final_norm", got.final_norm, original.final_norm, exact);
  if (diff.empty()) diff = compare_tensor("classifier", got.classifier, original.classifier, matrix);
  return diff;
}

inline bool same_tokenizer(const Tokenizer& a, const Tokenizer& b) {
  return a.pieces() == b.pieces() && a.scores() == b.scores() && a.types() == b.types() && a.bos_id() == b.bos_id() &&
         a.eos_id() == b.eos_id() && a.unk_id() == b.unk_id();
}

}  // namespace astrai::test
