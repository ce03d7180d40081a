#include "reference/synthetic_model.h"

#include <cmath>
#include <stdexcept>

#include "reference/splitmix64.h"

namespace astrai {
namespace {

// splitmix64 (reference/splitmix64.h): a tiny, well-mixed generator whose
// output is fixed by its seed.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() { return splitmix64_next(state_); }
  // Uniform in [lo, hi) from the top 24 bits, exactly representable in float.
  float uniform(float lo, float hi) { return lo + (hi - lo) * float(next() >> 40) * (1.0f / 16777216.0f); }

 private:
  uint64_t state_;
};

xt::xtensor<float, 2> random_matrix(SplitMix64& rng, int rows, int cols) {
  xt::xtensor<float, 2> m({size_t(rows), size_t(cols)});
  const float a = std::sqrt(3.0f / float(cols));
  for (auto& x : m) x = rng.uniform(-a, a);
  return m;
}

xt::xtensor<float, 1> random_vector(SplitMix64& rng, int n, float lo, float hi) {
  auto w = xt::xtensor<float, 1>::from_shape({size_t(n)});
  for (auto& x : w) x = rng.uniform(lo, hi);
  return w;
}

xt::xtensor<float, 1> random_norm_weight(SplitMix64& rng, int n) { return random_vector(rng, n, 0.5f, 1.5f); }

ModelConfig shape(int dim, int hidden, int layers, int heads, int kv_heads, int vocab, int ctx, float theta) {
  ModelConfig c;
  c.dim = dim;
  c.hidden_dim = hidden;
  c.n_layers = layers;
  c.n_heads = heads;
  c.n_kv_heads = kv_heads;
  c.vocab_size = vocab;
  c.max_seq_len = ctx;
  c.rope_theta = theta;
  return c;
}

// synthetic_tensor's plan: the tensors in the order make_synthetic_weights
// draws them, each with its law (the same as the helpers above).
enum class Law { Matrix, Embedding, Norm, Bias };
struct Piece {
  SyntheticField field;
  uint64_t rows, cols;  // cols 1 for a vector
  Law law;
};

std::vector<Piece> layer_pieces(const ModelConfig& c) {
  using L = LayerWeights;
  const uint64_t dim = c.dim, q = c.q_dim(), kv = c.kv_dim(), hidden = c.hidden_dim, head = c.head_dim();
  std::vector<Piece> p = {{&L::attn_norm, dim, 1, Law::Norm}, {&L::wq, q, dim, Law::Matrix},
                          {&L::wk, kv, dim, Law::Matrix},     {&L::wv, kv, dim, Law::Matrix},
                          {&L::wo, dim, q, Law::Matrix},      {&L::ffn_norm, dim, 1, Law::Norm},
                          {&L::w_gate, hidden, dim, Law::Matrix}, {&L::w_down, dim, hidden, Law::Matrix},
                          {&L::w_up, hidden, dim, Law::Matrix}};
  if (c.options.qkv_bias) p.insert(p.end(), {{&L::bq, q, 1, Law::Bias}, {&L::bk, kv, 1, Law::Bias}, {&L::bv, kv, 1, Law::Bias}});
  if (c.options.qk_norm) p.insert(p.end(), {{&L::q_norm, head, 1, Law::Norm}, {&L::k_norm, head, 1, Law::Norm}});
  return p;
}

std::vector<float> draw(const Piece& piece, SplitMix64 rng) {
  std::vector<float> v(size_t(piece.rows * piece.cols));
  const float a = std::sqrt(3.0f / float(piece.cols));
  for (auto& x : v) {
    switch (piece.law) {
      case Law::Matrix: x = rng.uniform(-a, a); break;
      case Law::Embedding: x = rng.uniform(-a, a) * std::sqrt(float(piece.cols)); break;
      case Law::Norm: x = rng.uniform(0.5f, 1.5f); break;
      case Law::Bias: x = rng.uniform(-1.0f, 1.0f); break;
    }
  }
  return v;
}

}  // namespace

std::vector<float> synthetic_tensor(const ModelConfig& c, uint64_t seed, const SyntheticField& field, int layer) {
  c.validate();
  using M = ModelWeights;
  const uint64_t vocab = c.vocab_size, dim = c.dim;
  const auto start = [&](uint64_t draws_before) { return SplitMix64(seed + draws_before * kSplitmix64Gamma); };
  const Piece embedding{&M::token_embedding, vocab, dim, Law::Embedding};
  const auto layer_plan = layer_pieces(c);
  uint64_t per_layer = 0;
  for (const auto& p : layer_plan) per_layer += p.rows * p.cols;
  const uint64_t layers_end = vocab * dim + uint64_t(c.n_layers) * per_layer;
  if (field == embedding.field) return draw(embedding, start(0));
  if (field == SyntheticField(&M::final_norm)) return draw({&M::final_norm, dim, 1, Law::Norm}, start(layers_end));
  if (field == SyntheticField(&M::classifier))
    return draw({&M::classifier, vocab, dim, Law::Matrix}, start(layers_end + dim));
  if (layer < 0 || layer >= c.n_layers)
    throw std::invalid_argument("synthetic_tensor: layer " + std::to_string(layer) + " of " + std::to_string(c.n_layers));
  uint64_t before = vocab * dim + uint64_t(layer) * per_layer;
  for (const auto& p : layer_plan) {
    if (p.field == field) return draw(p, start(before));
    before += p.rows * p.cols;
  }
  throw std::invalid_argument("synthetic_tensor: this config (" + c.describe() + ") has no such tensor");
}

ModelWeights make_synthetic_weights(const ModelConfig& config, uint64_t seed) {
  config.validate();
  SplitMix64 rng(seed);
  ModelWeights w;
  w.config = config;
  // The embedding is not followed by a projection, so give it unit-ish scale.
  w.token_embedding = random_matrix(rng, config.vocab_size, config.dim) * std::sqrt(float(config.dim));
  w.layers.resize(size_t(config.n_layers));
  for (auto& L : w.layers) {
    L.attn_norm = random_norm_weight(rng, config.dim);
    L.wq = random_matrix(rng, config.q_dim(), config.dim);
    L.wk = random_matrix(rng, config.kv_dim(), config.dim);
    L.wv = random_matrix(rng, config.kv_dim(), config.dim);
    L.wo = random_matrix(rng, config.dim, config.q_dim());
    L.ffn_norm = random_norm_weight(rng, config.dim);
    L.w_gate = random_matrix(rng, config.hidden_dim, config.dim);
    L.w_down = random_matrix(rng, config.dim, config.hidden_dim);
    L.w_up = random_matrix(rng, config.hidden_dim, config.dim);
    // The options' tensors come last and only when on, so a model without
    // them keeps the weights (and golden outputs) it always had.
    if (config.options.qkv_bias) {
      L.bq = random_vector(rng, config.q_dim(), -1.0f, 1.0f);
      L.bk = random_vector(rng, config.kv_dim(), -1.0f, 1.0f);
      L.bv = random_vector(rng, config.kv_dim(), -1.0f, 1.0f);
    }
    if (config.options.qk_norm) {
      L.q_norm = random_vector(rng, config.head_dim(), 0.5f, 1.5f);
      L.k_norm = random_vector(rng, config.head_dim(), 0.5f, 1.5f);
    }
  }
  w.final_norm = random_norm_weight(rng, config.dim);
  w.classifier = random_matrix(rng, config.vocab_size, config.dim);
  return w;
}

const std::vector<ModelPreset>& model_presets() {
  static const std::vector<ModelPreset> presets = {
      {"tiny", "a few-KB model for unit tests", shape(32, 64, 2, 4, 2, 64, 64, 10000.0f)},
      {"stories260K", "the shape of llama2.c's stories260K", shape(64, 172, 5, 8, 4, 512, 512, 10000.0f)},
      {"stories15M", "the shape of llama2.c's stories15M", shape(288, 768, 6, 6, 6, 32000, 256, 10000.0f)},
      {"stories110M", "the shape of llama2.c's stories110M", shape(768, 2048, 12, 12, 12, 32000, 1024, 10000.0f)},
      {"llama2-7b", "Llama 2 7B layer shapes (pass --layers to keep it small)",
       shape(4096, 11008, 32, 32, 32, 32000, 4096, 10000.0f)},
      {"llama3-8b", "Llama 3 8B layer shapes (pass --layers and --vocab to keep it small)",
       shape(4096, 14336, 32, 32, 8, 128256, 8192, 500000.0f)},
  };
  return presets;
}

ModelConfig preset_config(const std::string& name) {
  std::string known;
  for (const auto& p : model_presets()) {
    if (p.name == name) return p.config;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  throw std::invalid_argument("unknown model preset '" + name + "' (known: " + known + ")");
}

}  // namespace astrai
