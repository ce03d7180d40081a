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

}  // namespace

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
    if (config.qkv_bias) {
      L.bq = random_vector(rng, config.q_dim(), -1.0f, 1.0f);
      L.bk = random_vector(rng, config.kv_dim(), -1.0f, 1.0f);
      L.bv = random_vector(rng, config.kv_dim(), -1.0f, 1.0f);
    }
    if (config.qk_norm) {
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
