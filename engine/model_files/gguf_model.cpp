// GGUF <-> (ModelWeights, Tokenizer) with llama.cpp's `llama` names (see gguf_model.h).
//
// llama2.c checkpoints already use GGUF's adjacent-pair RoPE layout, so wq/wk
// are written as they are (llama.cpp's convert-llama2c does not permute them
// either; only Hugging Face's rotate-half checkpoints need the permutation).
#include "engine/model_files/gguf_model.h"

#include <cstring>
#include <limits>
#include <stdexcept>

#include "engine/model_files/gguf_reader.h"
#include "engine/model_files/gguf_tokenizer.h"
#include "engine/model_files/gguf_writer.h"

namespace astrai {
namespace {

std::string layer_tensor(int layer, const char* what) { return "blk." + std::to_string(layer) + "." + what + ".weight"; }

// llama.cpp's llama_ftype for a file whose matrices are all `dtype`.
uint32_t file_type_of(GgufDType dtype) {
  switch (dtype) {
    case GgufDType::F32: return 0;   // LLAMA_FTYPE_ALL_F32
    case GgufDType::F16: return 1;   // LLAMA_FTYPE_MOSTLY_F16
    case GgufDType::BF16: return 32; // LLAMA_FTYPE_MOSTLY_BF16
  }
  return 0;
}

GgmlType ggml_type_of(GgufDType dtype) {
  switch (dtype) {
    case GgufDType::F32: return GgmlType::F32;
    case GgufDType::F16: return GgmlType::F16;
    case GgufDType::BF16: return GgmlType::BF16;
  }
  return GgmlType::F32;
}

bool same_bits(const xt::xtensor<float, 2>& a, const xt::xtensor<float, 2>& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// ---- reading ----

// A positive count that fits in int, from an integer metadata value.
int positive_int(const GgufReader& g, const std::string& key) {
  const int64_t v = g.get_int(key);
  if (v <= 0 || v > std::numeric_limits<int32_t>::max())
    throw std::runtime_error(g.path() + ": metadata key '" + key + "' is " + std::to_string(v) +
                             ", expected a positive 32-bit count");
  return int(v);
}

ModelConfig read_config(const GgufReader& g) {
  const std::string arch = g.get_string("general.architecture");
  if (arch != "llama")
    throw std::runtime_error(g.path() + ": architecture '" + arch + "' is not supported (only 'llama')");
  ModelConfig c;
  c.dim = positive_int(g, "llama.embedding_length");
  c.hidden_dim = positive_int(g, "llama.feed_forward_length");
  c.n_layers = positive_int(g, "llama.block_count");
  c.n_heads = positive_int(g, "llama.attention.head_count");
  c.n_kv_heads = g.has("llama.attention.head_count_kv") ? positive_int(g, "llama.attention.head_count_kv") : c.n_heads;
  c.max_seq_len = positive_int(g, "llama.context_length");
  c.rope_theta = g.has("llama.rope.freq_base") ? float(g.get_float("llama.rope.freq_base")) : 10000.0f;
  c.norm_eps = float(g.get_float("llama.attention.layer_norm_rms_epsilon"));
  c.rope_layout = RopeLayout::AdjacentPairs;
  // The vocabulary size is the token list's length; llama.vocab_size, when present, must agree.
  const auto* tokens = g.find("tokenizer.ggml.tokens");
  const auto* token_array = tokens ? std::get_if<GgufArray>(&tokens->value) : nullptr;
  c.vocab_size = g.has("llama.vocab_size") ? positive_int(g, "llama.vocab_size")
                 : token_array            ? int(std::min<size_t>(token_array->elements.size(), INT32_MAX))
                                          : 0;
  try {
    c.validate();
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(g.path() + ": metadata describes an invalid model (" + c.describe() + "): " + e.what());
  }
  if (g.has("llama.rope.dimension_count") && g.get_int("llama.rope.dimension_count") != c.head_dim())
    throw std::runtime_error(g.path() + ": llama.rope.dimension_count " +
                             std::to_string(g.get_int("llama.rope.dimension_count")) + " differs from head_dim " +
                             std::to_string(c.head_dim()) + " (partial RoPE is not supported)");
  return c;
}

ModelWeights read_weights(const GgufReader& g, const ModelConfig& c) {
  const size_t dim = size_t(c.dim), hidden = size_t(c.hidden_dim), vocab = size_t(c.vocab_size);
  const size_t q_dim = size_t(c.q_dim()), kv_dim = size_t(c.kv_dim());
  auto vec = [&](const std::string& name, size_t n) { return g.read_tensor<1>(name, {n}); };
  auto mat = [&](const std::string& name, size_t rows, size_t cols) { return g.read_tensor<2>(name, {rows, cols}); };
  ModelWeights w;
  w.config = c;
  w.token_embedding = mat("token_embd.weight", vocab, dim);
  // One layer at a time, not resize(n_layers) first: n_layers is a claim of
  // the file, and only layers whose tensors are really there may take memory.
  for (int l = 0; l < c.n_layers; ++l) {
    auto& L = w.layers.emplace_back();
    L.attn_norm = vec(layer_tensor(l, "attn_norm"), dim);
    L.wq = mat(layer_tensor(l, "attn_q"), q_dim, dim);
    L.wk = mat(layer_tensor(l, "attn_k"), kv_dim, dim);
    L.wv = mat(layer_tensor(l, "attn_v"), kv_dim, dim);
    L.wo = mat(layer_tensor(l, "attn_output"), dim, q_dim);
    L.ffn_norm = vec(layer_tensor(l, "ffn_norm"), dim);
    L.w_gate = mat(layer_tensor(l, "ffn_gate"), hidden, dim);
    L.w_down = mat(layer_tensor(l, "ffn_down"), dim, hidden);
    L.w_up = mat(layer_tensor(l, "ffn_up"), hidden, dim);
  }
  w.final_norm = vec("output_norm.weight", dim);
  // llama.cpp omits output.weight for tied embeddings.
  w.classifier = g.find_tensor("output.weight") ? mat("output.weight", vocab, dim) : w.token_embedding;
  return w;
}

// ---- writing ----

void add_config(GgufWriter& out, const ModelConfig& c, GgufDType dtype, const std::string& name) {
  out.add_metadata("general.architecture", "llama");
  out.add_metadata("general.name", name);
  out.add_metadata("general.file_type", file_type_of(dtype));
  out.add_metadata("llama.context_length", uint32_t(c.max_seq_len));
  out.add_metadata("llama.embedding_length", uint32_t(c.dim));
  out.add_metadata("llama.block_count", uint32_t(c.n_layers));
  out.add_metadata("llama.feed_forward_length", uint32_t(c.hidden_dim));
  out.add_metadata("llama.rope.dimension_count", uint32_t(c.head_dim()));
  out.add_metadata("llama.attention.head_count", uint32_t(c.n_heads));
  out.add_metadata("llama.attention.head_count_kv", uint32_t(c.n_kv_heads));
  out.add_metadata("llama.attention.layer_norm_rms_epsilon", c.norm_eps);
  out.add_metadata("llama.rope.freq_base", c.rope_theta);
  out.add_metadata("llama.vocab_size", uint32_t(c.vocab_size));
}

void add_weights(GgufWriter& out, const ModelWeights& w, GgmlType matrix_type) {
  const GgmlType norm_type = GgmlType::F32;
  out.add_tensor("token_embd.weight", w.token_embedding, matrix_type);
  for (int l = 0; l < w.config.n_layers; ++l) {
    const auto& L = w.layers[size_t(l)];
    out.add_tensor(layer_tensor(l, "attn_norm"), L.attn_norm, norm_type);
    out.add_tensor(layer_tensor(l, "attn_q"), L.wq, matrix_type);
    out.add_tensor(layer_tensor(l, "attn_k"), L.wk, matrix_type);
    out.add_tensor(layer_tensor(l, "attn_v"), L.wv, matrix_type);
    out.add_tensor(layer_tensor(l, "attn_output"), L.wo, matrix_type);
    out.add_tensor(layer_tensor(l, "ffn_norm"), L.ffn_norm, norm_type);
    out.add_tensor(layer_tensor(l, "ffn_gate"), L.w_gate, matrix_type);
    out.add_tensor(layer_tensor(l, "ffn_down"), L.w_down, matrix_type);
    out.add_tensor(layer_tensor(l, "ffn_up"), L.w_up, matrix_type);
  }
  out.add_tensor("output_norm.weight", w.final_norm, norm_type);
  if (!same_bits(w.classifier, w.token_embedding)) out.add_tensor("output.weight", w.classifier, matrix_type);
}

}  // namespace

GgufDType parse_gguf_dtype(const std::string& name) {
  if (name == "f32") return GgufDType::F32;
  if (name == "f16") return GgufDType::F16;
  if (name == "bf16") return GgufDType::BF16;
  throw std::invalid_argument("unknown GGUF tensor type '" + name + "' (choose f32, f16 or bf16)");
}

std::string gguf_dtype_name(GgufDType dtype) {
  switch (dtype) {
    case GgufDType::F32: return "f32";
    case GgufDType::F16: return "f16";
    case GgufDType::BF16: return "bf16";
  }
  return "?";
}

GgufModel read_gguf_model(const std::string& path) {
  const GgufReader g(path);
  const ModelConfig config = read_config(g);
  ModelWeights weights = read_weights(g, config);
  Tokenizer tokenizer = read_gguf_tokenizer(g, config.vocab_size);
  const std::string name = g.has("general.name") ? g.get_string("general.name") : "";
  const std::string chat_template = g.has("tokenizer.chat_template") ? g.get_string("tokenizer.chat_template") : "";
  return GgufModel{std::move(weights), std::move(tokenizer), name, chat_template};
}

void write_gguf_model(const std::string& path, const ModelWeights& weights, const Tokenizer& tokenizer,
                      GgufDType dtype, const std::string& name) {
  weights.validate_shapes();
  if (weights.config.rope_layout != RopeLayout::AdjacentPairs)
    throw std::invalid_argument("write_gguf_model: GGUF's llama tensors use adjacent-pair RoPE; this model uses "
                                "rotate-half (permute its wq/wk rows first)");
  if (tokenizer.vocab_size() != weights.config.vocab_size)
    throw std::invalid_argument("write_gguf_model: tokenizer has " + std::to_string(tokenizer.vocab_size()) +
                                " pieces, the model's vocabulary " + std::to_string(weights.config.vocab_size));
  GgufWriter out;
  add_config(out, weights.config, dtype, name);
  add_gguf_tokenizer(out, tokenizer);
  add_weights(out, weights, ggml_type_of(dtype));
  out.write(path);
}

}  // namespace astrai
