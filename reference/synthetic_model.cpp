#include "reference/synthetic_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>
#include <variant>

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

// The tensors in the order make_synthetic_weights draws them, each with its
// law. In a layer the options' tensors come last and only when on, so a model
// without them keeps the weights (and golden outputs) it always had; a sparse
// layer draws its router and experts where a dense one draws its SwiGLU.
// NormOffset: a norm weight stored as its offset from 1 (norm_unit_offset), so
// that the norm's scale 1 + w has Norm's range.
enum class Law { Matrix, Embedding, Norm, NormOffset, Bias };
struct Piece {
  SyntheticField field;
  std::vector<size_t> shape;  // row-major; a matrix's inputs are the last axis
  Law law;

  uint64_t size() const {
    uint64_t n = 1;
    for (size_t d : shape) n *= d;
    return n;
  }
};

std::vector<Piece> layer_pieces(const ModelConfig& c, int layer) {
  using L = LayerWeights;
  const size_t dim = c.dim, q = c.q_dim(), kv = c.kv_dim(), hidden = c.hidden_dim, head = c.head_dim();
  const MoeConfig& m = c.moe;
  const size_t experts = size_t(m.n_experts), eh = size_t(m.expert_hidden_dim), sh = size_t(m.shared_expert_hidden_dim);
  const Law norm = c.options.norm_unit_offset ? Law::NormOffset : Law::Norm;
  std::vector<Piece> p = {{&L::attn_norm, {dim}, norm}, {&L::wq, {q, dim}, Law::Matrix},
                          {&L::wk, {kv, dim}, Law::Matrix},  {&L::wv, {kv, dim}, Law::Matrix},
                          {&L::wo, {dim, q}, Law::Matrix},   {&L::ffn_norm, {dim}, norm}};
  const bool sparse = m.sparse(layer);
  if (!sparse)
    p.insert(p.end(), {{&L::w_gate, {hidden, dim}, Law::Matrix}, {&L::w_down, {dim, hidden}, Law::Matrix},
                       {&L::w_up, {hidden, dim}, Law::Matrix}});
  else
    p.insert(p.end(), {{&L::router, {experts, dim}, Law::Matrix}, {&L::exp_gate, {experts, eh, dim}, Law::Matrix},
                       {&L::exp_down, {experts, dim, eh}, Law::Matrix}, {&L::exp_up, {experts, eh, dim}, Law::Matrix}});
  if (c.options.qkv_bias) p.insert(p.end(), {{&L::bq, {q}, Law::Bias}, {&L::bk, {kv}, Law::Bias}, {&L::bv, {kv}, Law::Bias}});
  if (c.options.qk_norm) p.insert(p.end(), {{&L::q_norm, {head}, norm}, {&L::k_norm, {head}, norm}});
  if (sparse && c.options.router_bias) p.push_back({&L::router_bias, {experts}, Law::Bias});
  if (sparse && c.options.shared_expert)
    p.insert(p.end(), {{&L::shexp_gate_inp, {1, dim}, Law::Matrix}, {&L::shexp_gate, {sh, dim}, Law::Matrix},
                       {&L::shexp_down, {dim, sh}, Law::Matrix}, {&L::shexp_up, {sh, dim}, Law::Matrix}});
  if (c.options.attention_sinks) p.push_back({&L::sinks, {size_t(c.n_heads)}, Law::Bias});
  if (c.options.sandwich_norms)
    p.insert(p.end(), {{&L::post_attn_norm, {dim}, norm}, {&L::post_ffn_norm, {dim}, norm}});
  if (c.options.out_bias) p.push_back({&L::bo, {dim}, Law::Bias});
  if (sparse && c.options.expert_biases)
    p.insert(p.end(), {{&L::exp_gate_bias, {experts, eh}, Law::Bias}, {&L::exp_up_bias, {experts, eh}, Law::Bias},
                       {&L::exp_down_bias, {experts, dim}, Law::Bias}});
  return p;
}

uint64_t draws_of(const std::vector<Piece>& pieces) {
  uint64_t n = 0;
  for (const auto& p : pieces) n += p.size();
  return n;
}

// The piece's values, drawn from `rng` (advanced past them).
std::vector<float> draw(const Piece& piece, SplitMix64& rng) {
  std::vector<float> v(size_t(piece.size()));
  const size_t cols = piece.shape.size() == 1 ? 1 : piece.shape.back();
  const float a = std::sqrt(3.0f / float(cols));
  for (auto& x : v) {
    switch (piece.law) {
      case Law::Matrix: x = rng.uniform(-a, a); break;
      case Law::Embedding: x = rng.uniform(-a, a) * std::sqrt(float(cols)); break;
      case Law::Norm: x = rng.uniform(0.5f, 1.5f); break;
      case Law::NormOffset: x = rng.uniform(-0.5f, 0.5f); break;
      case Law::Bias: x = rng.uniform(-1.0f, 1.0f); break;
    }
  }
  return v;
}

// Draws the piece into the field it names in `w` (a layer's when `layer` >= 0).
void draw_into(ModelWeights& w, int layer, const Piece& piece, SplitMix64& rng) {
  std::vector<float> values = draw(piece, rng);
  std::visit(
      [&](auto field) {
        auto& t = [&]() -> auto& {
          if constexpr (std::is_same_v<typename SyntheticFieldOwner<decltype(field)>::type, ModelWeights>)
            return w.*field;
          else
            return w.layers[size_t(layer)].*field;
        }();
        using T = std::remove_reference_t<decltype(t)>;
        typename T::shape_type shape;
        std::copy(piece.shape.begin(), piece.shape.end(), shape.begin());
        t = T::from_shape(shape);
        std::copy(values.begin(), values.end(), t.begin());
      },
      piece.field);
}

struct Plan {
  Piece embedding, final_norm, classifier;
  std::vector<std::vector<Piece>> layers;
};

Plan plan_of(const ModelConfig& c) {
  using M = ModelWeights;
  const size_t vocab = c.vocab_size, dim = c.dim;
  // A scaled embedding (Gemma) is drawn as a matrix: times sqrt(dim) it has the others' spread.
  Plan plan{{&M::token_embedding, {vocab, dim}, c.options.scaled_embedding ? Law::Matrix : Law::Embedding},
            {&M::final_norm, {dim}, c.options.norm_unit_offset ? Law::NormOffset : Law::Norm},
            {&M::classifier, {vocab, dim}, Law::Matrix},
            {}};
  for (int l = 0; l < c.n_layers; ++l) plan.layers.push_back(layer_pieces(c, l));
  return plan;
}

}  // namespace

std::vector<float> synthetic_tensor(const ModelConfig& c, uint64_t seed, const SyntheticField& field, int layer) {
  c.validate();
  const Plan plan = plan_of(c);
  // The generator after `draws_before` draws (counter-based: see the header).
  const auto draw_at = [&](const Piece& p, uint64_t draws_before) {
    SplitMix64 rng(seed + draws_before * kSplitmix64Gamma);
    return draw(p, rng);
  };
  uint64_t before = plan.embedding.size();
  if (field == plan.embedding.field) return draw_at(plan.embedding, 0);
  const bool model_wide = field == plan.final_norm.field || field == plan.classifier.field;
  if (!model_wide && (layer < 0 || layer >= c.n_layers))
    throw std::invalid_argument("synthetic_tensor: layer " + std::to_string(layer) + " of " + std::to_string(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l) {
    if (l == layer && !model_wide)
      for (const auto& p : plan.layers[size_t(l)]) {
        if (p.field == field) return draw_at(p, before);
        before += p.size();
      }
    else
      before += draws_of(plan.layers[size_t(l)]);
  }
  if (field == plan.final_norm.field) return draw_at(plan.final_norm, before);
  if (field == plan.classifier.field) return draw_at(plan.classifier, before + plan.final_norm.size());
  throw std::invalid_argument("synthetic_tensor: this config (" + c.describe() + ") has no such tensor in layer " +
                              std::to_string(layer));
}

ModelWeights make_synthetic_weights(const ModelConfig& config, uint64_t seed) {
  config.validate();
  const Plan plan = plan_of(config);
  SplitMix64 rng(seed);
  ModelWeights w;
  w.config = config;
  w.layers.resize(size_t(config.n_layers));
  draw_into(w, -1, plan.embedding, rng);
  for (int l = 0; l < config.n_layers; ++l)
    for (const auto& p : plan.layers[size_t(l)]) draw_into(w, l, p, rng);
  draw_into(w, -1, plan.final_norm, rng);
  draw_into(w, -1, plan.classifier, rng);
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
