// GGUF <-> (ModelWeights, Tokenizer) with llama.cpp's names for the `llama`
// (with experts: Mixtral), `qwen2`, `qwen3`, `qwen2moe`, `qwen3moe`, `gemma3`
// and `gpt-oss` architectures (see gguf_model.h).
//
// RoPE layouts: llama.cpp runs `llama` with adjacent pairs (its "normal"
// RoPE) and `qwen2`/`qwen3` with rotate-half ("neox"). llama2.c checkpoints
// already use adjacent pairs; Hugging Face weights are rotate-half, so their
// wq/wk rows are permuted for `llama` as llama.cpp's converter does
// (rope_layout.h) and kept as they are for Qwen.
#include "engine/model_files/gguf/gguf_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>

#include "engine/model_files/architectures.h"
#include "engine/model_files/gguf/gguf_reader.h"
#include "engine/model_files/hf/hf_config.h"
#include "engine/model_files/quant/dequantize.h"
#include "engine/model_files/rope_layout.h"
#include "reference/rope.h"
#include "engine/model_files/gguf/gguf_vocabulary.h"
#include "engine/model_files/gguf/gguf_writer.h"
#include "engine/model_files/weight_table.h"

namespace astrai {
namespace {

// The GGUF architecture of a config: llama.cpp's name for the Hugging Face
// architecture it needs (Mistral runs as "llama" there). Throws, as
// hf_architecture_for does, for a config no architecture has.
const Architecture& architecture_of(const ModelConfig& c) { return architecture(hf_architecture_for(c)); }

// llama.cpp's rope_freqs.weight: per pair, unscaled frequency / scaled one.
std::vector<float> rope_freq_factors(const ModelConfig& c) {
  const auto plain = rope_frequencies(c.head_dim(), c.rope_theta);
  const auto scaled = rope_frequencies(c);
  std::vector<float> factors(plain.size());
  for (size_t i = 0; i < plain.size(); ++i) factors[i] = plain[i] / scaled[i];
  return factors;
}

// llama.cpp's llama_ftype for a file whose matrices are all `dtype`.
uint32_t file_type_of(GgufDType dtype) {
  switch (dtype) {
    case GgufDType::F32: return 0;   // LLAMA_FTYPE_ALL_F32
    case GgufDType::F16: return 1;   // LLAMA_FTYPE_MOSTLY_F16
    case GgufDType::BF16: return 32; // LLAMA_FTYPE_MOSTLY_BF16
    case GgufDType::Q8_0: return 7;  // LLAMA_FTYPE_MOSTLY_Q8_0
    case GgufDType::Q4_0: return 2;  // LLAMA_FTYPE_MOSTLY_Q4_0
    case GgufDType::Q4_K: return 14; // LLAMA_FTYPE_MOSTLY_Q4_K_S (every matrix Q4_K)
    case GgufDType::Q6_K: return 18; // LLAMA_FTYPE_MOSTLY_Q6_K
  }
  return 0;
}

GgmlType ggml_type_of(GgufDType dtype) {
  switch (dtype) {
    case GgufDType::F32: return GgmlType::F32;
    case GgufDType::F16: return GgmlType::F16;
    case GgufDType::BF16: return GgmlType::BF16;
    case GgufDType::Q8_0: return GgmlType::Q8_0;
    case GgufDType::Q4_0: return GgmlType::Q4_0;
    case GgufDType::Q4_K: return GgmlType::Q4_K;
    case GgufDType::Q6_K: return GgmlType::Q6_K;
  }
  return GgmlType::F32;
}

// The type a matrix with rows of `row` weights is stored as: `wanted`, or
// when its rows are not whole blocks of it, Q8_0 (rows of 32s) or F16, as
// llama.cpp falls back (it picks Q5_0 / Q5_1 / Q8_0 by type; AstrAI writes
// Q8_0, at least as precise).
GgmlType matrix_type_for(GgmlType wanted, size_t row) {
  if (row % ggml_type_traits(uint32_t(wanted))->block_size == 0) return wanted;
  return row % 32 == 0 ? GgmlType::Q8_0 : GgmlType::F16;
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

// The keys holding Llama 3.1 scaling's exact parameters in the files AstrAI
// writes. llama.cpp has no key for them (its converter writes only
// rope_freqs.weight) and reads <arch>.rope.scaling.type and .factor as its own
// scalings (an unknown type aborts it, a factor alone is linear scaling), so
// they live in a namespace llama.cpp does not read.
const std::string kLlama3Keys = "astrai.rope.llama3.";

// The clamped SwiGLU's limit llama.cpp's gpt-oss graph fixes (swiglu_oai's
// alpha 1.702 is reference/swiglu.h's too); gpt-oss's configs say 7.0.
constexpr float kGptOssSwigluLimit = 7.0f;

// Scaling parameters from llama3-style keys under `prefix`.
RopeScaling llama3_keys(const GgufReader& g, const std::string& prefix) {
  RopeScaling s;
  s.factor = float(g.get_float(prefix + "factor"));
  s.low_freq_factor = float(g.get_float(prefix + "low_freq_factor"));
  s.high_freq_factor = float(g.get_float(prefix + "high_freq_factor"));
  s.original_context = positive_int(g, prefix + "original_context_length");
  return s;
}

// Whether YaRN rounds its ramp's ends to whole pairs (transformers'
// `truncate`). llama.cpp always does; gpt-oss's config sets false, and
// transformers, which this engine follows, then does not. llama.cpp has no
// key for it, so AstrAI writes its own; a file without it (llama.cpp's
// converter's) gets the value the architecture's Hugging Face configs have.
const std::string kYarnTruncateKey = "astrai.rope.yarn.truncate";

// YaRN's magnitude as llama.cpp computes it: (1 + 0.1 ln factor) times
// rope.scaling.attn_factor (default 1), the same as transformers' default
// attention factor; a file's attn_factor is kept as the config's
// attention_factor.
float yarn_attn_factor_key(const RopeScaling& s) {
  return s.attention_factor > 0.0f ? s.attention_factor / (1.0f + 0.1f * std::log(s.factor)) : 1.0f;
}

// llama.cpp's YaRN keys under `key` (rope.scaling.): factor,
// original_context_length (default: the training context), attn_factor, and
// yarn_beta_fast / yarn_beta_slow (32 and 1, llama.cpp's defaults; llama.cpp
// reads them for other architectures than these, AstrAI wherever present).
RopeScaling yarn_keys(const GgufReader& g, const std::string& key, const std::string& arch, int context) {
  RopeScaling s{.factor = float(g.get_float(key + "factor")), .kind = RopeScalingKind::Yarn};
  s.original_context = g.has(key + "original_context_length") ? positive_int(g, key + "original_context_length") : context;
  if (g.has(key + "yarn_beta_fast")) s.beta_fast = float(g.get_float(key + "yarn_beta_fast"));
  if (g.has(key + "yarn_beta_slow")) s.beta_slow = float(g.get_float(key + "yarn_beta_slow"));
  if (g.has(key + "attn_factor")) {
    const double a = g.get_float(key + "attn_factor");
    if (a != 1.0) s.attention_factor = float(a * (1.0 + 0.1 * std::log(double(s.factor))));
  }
  s.truncate = g.has(kYarnTruncateKey) ? g.get_bool(kYarnTruncateKey) : arch != "gpt-oss";
  return s;
}

// llama.cpp's RoPE scaling keys: "none" (or no key) and a factor of 0 or 1
// change nothing; "linear" (or a factor alone) is linear scaling (Gemma 3's
// full layers); "yarn" is YaRN (gpt-oss); anything else is a scaling this
// engine does not run.
RopeScaling llama_cpp_scaling(const GgufReader& g, const std::string& key, const std::string& arch, int context) {
  const std::string type = g.has(key + "type") ? g.get_string(key + "type") : "";
  if (!type.empty() && type != "none" && type != "linear" && type != "yarn")
    throw std::runtime_error(g.path() + ": RoPE scaling '" + type +
                             "' is not supported (Llama 3.1's, linear and YaRN are)");
  if (type == "none" || !g.has(key + "factor")) return {};
  const double factor = g.get_float(key + "factor");
  if (factor == 0.0 || factor == 1.0) return {};
  if (type == "yarn") return yarn_keys(g, key, arch, context);
  return RopeScaling{.factor = float(factor), .kind = RopeScalingKind::Linear};
}

// Llama 3.1 scaling, as llama.cpp reads it: rope_freqs.weight, per pair the
// unscaled frequency over the scaled one. Its parameters are AstrAI's keys
// (kLlama3Keys) when present, else Meta's (low 1, high 4, original context
// 8192, the largest entry as `factor`, what llama.cpp's converter makes of
// Llama 3.1 and 3.2); either way the table must be what they give, pair by
// pair, or this engine and llama.cpp would run different models. Files that
// AstrAI wrote before it wrote llama.cpp's form keep their parameters in
// <arch>.rope.scaling.* with type "llama3" (which llama.cpp refuses).
RopeScaling read_rope_scaling(const GgufReader& g, const std::string& arch, const ModelConfig& c) {
  const std::string key = arch + ".rope.scaling.";
  if (g.has(key + "type") && g.get_string(key + "type") == "llama3") return llama3_keys(g, key);
  const RopeScaling own = llama_cpp_scaling(g, key, arch, c.max_seq_len);
  const bool has_table = g.find_tensor("rope_freqs.weight") != nullptr;
  if (!has_table) {
    if (g.has(kLlama3Keys + "factor"))
      throw std::runtime_error(g.path() + ": " + kLlama3Keys + "* without rope_freqs.weight (llama.cpp would not scale)");
    return own;
  }
  if (own.enabled())
    throw std::runtime_error(g.path() + ": " + key + "* with rope_freqs.weight (two scalings at once)");
  if (arch != "llama")
    throw std::runtime_error(g.path() + ": rope_freqs.weight in a " + arch +
                             " file (llama.cpp's " + arch + " has no per-pair RoPE factors)");
  const auto pairs = size_t(c.head_dim() / 2);
  const auto table = g.read_tensor<1>("rope_freqs.weight", {pairs});
  RopeScaling s;
  if (g.has(kLlama3Keys + "factor")) {
    s = llama3_keys(g, kLlama3Keys);
  } else {
    s.factor = *std::max_element(table.begin(), table.end());
  }
  ModelConfig scaled = c;
  scaled.rope_scaling = s;
  scaled.validate();
  const auto want = rope_freq_factors(scaled);
  for (size_t i = 0; i < pairs; ++i)
    if (!(std::abs(table(i) - want[i]) <= 1e-4f * want[i]))
      throw std::runtime_error(g.path() + ": rope_freqs.weight pair " + std::to_string(i) + " is " +
                               std::to_string(table(i)) + ", not Llama 3 scaling's " + std::to_string(want[i]) +
                               " (other per-pair RoPE factors are not supported)");
  return s;
}

// The Mixture-of-Experts keys llama.cpp reads for `row`'s architecture:
// expert_count, expert_used_count, expert_feed_forward_length (llama: the
// experts are feed_forward_length wide; when absent llama.cpp takes
// feed_forward_length / expert_used_count) and
// expert_shared_feed_forward_length. llama.cpp runs experts in every layer
// and renormalises the top-k weights as its graph for the architecture does
// (MoeFields::gguf_norm_topk_prob); its graphs for these architectures read
// no other expert key (expert_weights_scale, expert_gating_func), so neither
// does this.
void read_moe(const GgufReader& g, const std::string& p, const Architecture& row, ModelConfig& c) {
  MoeConfig& m = c.moe;
  m.n_experts = positive_int(g, p + "expert_count");
  m.n_experts_used = positive_int(g, p + "expert_used_count");
  m.expert_hidden_dim = row.moe.gpt_oss_fields ? positive_int(g, p + "expert_feed_forward_length")  // required there
                        : !row.moe.expert_hidden_dim                ? c.hidden_dim
                        : g.has(p + "expert_feed_forward_length") ? positive_int(g, p + "expert_feed_forward_length")
                                                                  : c.hidden_dim / m.n_experts_used;
  if (row.options.shared_expert)
    m.shared_expert_hidden_dim = g.has(p + "expert_shared_feed_forward_length")
                                     ? positive_int(g, p + "expert_shared_feed_forward_length")
                                     : c.hidden_dim;
  m.norm_topk_prob = row.moe.gguf_norm_topk_prob;
  if (row.moe.gpt_oss_fields) {  // llama.cpp's gpt-oss graph: top-k, softmax over them, swiglu_oai with limit 7
    m.routing = ExpertRouting::TopKSoftmax;
    m.swiglu_limit = kGptOssSwigluLimit;
  }
}

// What llama.cpp's gpt-oss reads: a window on every layer but each
// sliding_window_pattern-th (default 2: even layers slide), the key
// attention.sliding_window being required.
std::vector<bool> gpt_oss_sliding_layers(int n_layers, int pattern) {
  return sliding_layers_by_pattern(n_layers, pattern);
}

void read_gpt_oss(const GgufReader& g, const std::string& p, ModelConfig& c) {
  positive_int(g, p + "attention.sliding_window");  // llama.cpp refuses a file without it
  const int pattern = g.has(p + "attention.sliding_window_pattern") ? positive_int(g, p + "attention.sliding_window_pattern") : 2;
  if (c.sliding_window == 0) return;  // a window as long as the context
  c.sliding_layers = gpt_oss_sliding_layers(c.n_layers, pattern);
  if (std::find(c.sliding_layers.begin(), c.sliding_layers.end(), false) == c.sliding_layers.end())
    c.sliding_layers.clear();  // every layer slides
}

// What llama.cpp's gemma3 fixes rather than reads (llama_model's hparams
// for LLM_ARCH_GEMMA3): every sixth layer full, the others sliding with
// rope base 10000 unscaled; scores scaled by 1 / sqrt(head_dim), or
// 1 / sqrt(dim / heads) for the 62-layer (27B) model; the final soft cap
// only where no layer slides (its graph with windows leaves it out).
std::vector<bool> gemma3_sliding_layers(int n_layers) { return sliding_layers_by_pattern(n_layers, 6); }
float gemma3_query_scalar(const ModelConfig& c) {
  return c.n_layers == 62 ? float(c.dim / c.n_heads) : float(c.head_dim());
}

void read_gemma3(const GgufReader& g, const std::string& p, ModelConfig& c) {
  if (c.sliding_window > 0) {
    c.sliding_layers = gemma3_sliding_layers(c.n_layers);
    if (c.n_layers < 6) c.sliding_layers.clear();  // every layer slides
    c.sliding_rope_theta = 10000.0f;
  }
  c.query_pre_attn_scalar = gemma3_query_scalar(c);
  if (c.sliding_window == 0 && g.has(p + "final_logit_softcapping"))
    c.final_logit_softcap = float(g.get_float(p + "final_logit_softcapping"));
}

ModelConfig read_config(const GgufReader& g) {
  const std::string arch = g.get_string("general.architecture");
  const bool experts = g.has(arch + ".expert_count") && g.get_int(arch + ".expert_count") != 0;
  const Architecture* known = gguf_architecture(arch, experts);
  if (!known)
    throw std::runtime_error(g.path() + ": architecture '" + arch + "'" +
                             (gguf_architecture(arch, !experts) ? experts ? " with experts" : " without expert_count" : "") +
                             " is not supported (" + gguf_architecture_names() + " are)");
  const std::string p = arch + ".";
  ModelConfig c;
  c.dim = positive_int(g, p + "embedding_length");
  c.hidden_dim = positive_int(g, p + "feed_forward_length");
  c.n_layers = positive_int(g, p + "block_count");
  c.n_heads = positive_int(g, p + "attention.head_count");
  c.n_kv_heads = g.has(p + "attention.head_count_kv") ? positive_int(g, p + "attention.head_count_kv") : c.n_heads;
  c.max_seq_len = positive_int(g, p + "context_length");
  c.rope_theta = g.has(p + "rope.freq_base") ? float(g.get_float(p + "rope.freq_base")) : 10000.0f;
  c.norm_eps = float(g.get_float(p + "attention.layer_norm_rms_epsilon"));
  c.rope_layout = known->gguf_rope_layout;
  c.options = known->options;
  if (experts) read_moe(g, p, *known, c);
  // attention.key_length: the head width when it is not dim / n_heads (Qwen 3).
  if (g.has(p + "attention.key_length")) {
    const int key_length = positive_int(g, p + "attention.key_length");
    if (g.has(p + "attention.value_length") && g.get_int(p + "attention.value_length") != key_length)
      throw std::runtime_error(g.path() + ": attention.value_length differs from key_length (not supported)");
    if (c.dim % c.n_heads != 0 || key_length != c.dim / c.n_heads) c.explicit_head_dim = key_length;
  }
  // The vocabulary size is the token list's length; <arch>.vocab_size, when present, must agree.
  const auto* tokens = g.find("tokenizer.ggml.tokens");
  const auto* token_array = tokens ? std::get_if<GgufArray>(&tokens->value) : nullptr;
  c.vocab_size = g.has(p + "vocab_size") ? positive_int(g, p + "vocab_size")
                 : token_array          ? int(std::min<size_t>(token_array->elements.size(), INT32_MAX))
                                        : 0;
  // attention.sliding_window: every layer attends over the last that many
  // positions (AstrAI's converter writes it for Mistral; llama.cpp's llama,
  // qwen2 and qwen3 graphs ignore it); no shorter than the context: full.
  if (g.has(p + "attention.sliding_window")) {
    const int window = positive_int(g, p + "attention.sliding_window");
    if (window < c.max_seq_len) c.sliding_window = window;
  }
  if (arch == "gemma3") read_gemma3(g, p, c);
  if (arch == "gpt-oss") read_gpt_oss(g, p, c);
  try {
    c.validate();
    c.rope_scaling = read_rope_scaling(g, arch, c);
    c.validate();
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(g.path() + ": metadata describes an invalid model (" + c.describe() + "): " + e.what());
  }
  if (g.has(p + "rope.dimension_count") && g.get_int(p + "rope.dimension_count") != c.head_dim())
    throw std::runtime_error(g.path() + ": " + p + "rope.dimension_count " +
                             std::to_string(g.get_int(p + "rope.dimension_count")) + " differs from head_dim " +
                             std::to_string(c.head_dim()) + " (partial RoPE is not supported)");
  return c;
}

// Gemma's norms scale by 1 + w; llama.cpp's converter stores 1 + w in the
// file (every tensor whose name ends in "norm.weight") and its graph
// multiplies by what is stored. The reader takes the 1 back off, and the
// forward pass adds it again: for a stored s in [0.5, 2^24) both steps are
// exact (s - 1 is a multiple of s's ulp no smaller than 1's), so the norm
// scales by the file's s, bit for bit, as llama.cpp does.
bool stores_unit_offset(const ModelTensor& t) {
  const std::string name = t.gguf_name();
  return name.size() >= 11 && name.compare(name.size() - 11, 11, "norm.weight") == 0;
}

// The file's weights as a source: each tensor decoded when read, the
// quantized ones' blocks given as the mapping holds them. The source holds
// the reader (and so the mapping) for as long as it lives.
ModelSource weights_source(std::shared_ptr<const GgufReader> g, const ModelConfig& c) {
  ModelSource source;
  source.config = c;
  source.tied = g->find_tensor("output.weight") == nullptr;  // llama.cpp omits output.weight for tied embeddings
  for (const auto& t : g->tensors()) source.stored[t.name] = StoredTensor{ggml_type_name(t.type), t.n_bytes};
  // Every tensor the model needs is there, of its shape and of a type this
  // reader decodes, before anything is read: a bad file fails at once, not
  // half-way through an upload to the GPU.
  for_each_model_tensor(c, source.tied, [&](const ModelTensor& t) {
    const GgufTensorInfo& info = g->tensor_with_shape(t.gguf_name(), t.shape);
    const bool float_type = info.type == GgmlType::F32 || info.type == GgmlType::F16 || info.type == GgmlType::BF16;
    if (!float_type && !quant::can_dequantize(info.type))
      throw std::runtime_error(g->path() + ": tensor '" + info.name + "' has type " + ggml_type_name(info.type) +
                               "; AstrAI reads F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4 and Q2_K ... Q6_K");
  });
  const bool offset = c.options.norm_unit_offset;
  source.read = [g, offset](const ModelTensor& t) {
    std::vector<float> values = g->read_tensor_values(t.gguf_name(), t.shape);
    if (offset && stores_unit_offset(t))
      for (float& v : values) v -= 1.0f;  // the file holds 1 + w (add_weights)
    return values;
  };
  source.blocks = [g](const ModelTensor& t) -> std::optional<TensorBlocks> {
    const GgufTensorInfo& info = g->tensor_with_shape(t.gguf_name(), t.shape);
    if (!quant::can_dequantize(info.type)) return std::nullopt;
    return TensorBlocks{ggml_type_name(info.type), g->tensor_data(info), nullptr};
  };
  source.release_blocks = [g](const TensorBlocks& done) { g->release(done.bytes); };
  return source;
}

// ---- writing ----

// The expert keys (read_moe); throws for what llama.cpp's graph for the
// architecture cannot run.
void add_moe(GgufWriter& out, const ModelConfig& c, const Architecture& row) {
  const std::string p = std::string(row.gguf_name) + ".";
  const MoeConfig& m = c.moe;
  auto refuse = [&](const std::string& what) {
    throw std::invalid_argument("write_gguf_model: llama.cpp's " + std::string(row.gguf_name) + " " + what);
  };
  for (int l = 0; l < c.n_layers; ++l)
    if (!m.sparse(l)) refuse("has experts in every layer; layer " + std::to_string(l) + " of this model is dense");
  if (row.moe.gpt_oss_fields) {
    if (m.routing != ExpertRouting::TopKSoftmax) refuse("routes top-k then softmax");
    if (m.swiglu_limit != kGptOssSwigluLimit)
      refuse("clamps its SwiGLU at 7 (swiglu_limit " + std::to_string(m.swiglu_limit) + " here)");
  } else {
    if (m.routing != ExpertRouting::SoftmaxTopK) refuse("routes softmax then top-k");
    if (m.norm_topk_prob != row.moe.gguf_norm_topk_prob)
      refuse(std::string(row.moe.gguf_norm_topk_prob ? "always renormalises" : "never renormalises") +
             " the top-k weights (norm_topk_prob " + (m.norm_topk_prob ? "true" : "false") + " here)");
    if (c.options.router_bias) refuse("has no router bias");
    if (m.swiglu_limit > 0.0f) refuse("has no clamped SwiGLU (swiglu_limit)");
  }
  if (!row.moe.expert_hidden_dim && !row.moe.gpt_oss_fields && m.expert_hidden_dim != c.hidden_dim)
    refuse("experts are feed_forward_length wide (" + std::to_string(c.hidden_dim) + "), not " +
           std::to_string(m.expert_hidden_dim));
  out.add_metadata(p + "expert_count", uint32_t(m.n_experts));
  out.add_metadata(p + "expert_used_count", uint32_t(m.n_experts_used));
  if (row.moe.expert_hidden_dim || row.moe.gpt_oss_fields)
    out.add_metadata(p + "expert_feed_forward_length", uint32_t(m.expert_hidden_dim));
  if (c.options.shared_expert)
    out.add_metadata(p + "expert_shared_feed_forward_length", uint32_t(m.shared_expert_hidden_dim));
}

// gemma3's window key (which llama.cpp requires: no window is one as long as
// the context), after checking that the model is what llama.cpp's gemma3
// fixes (read_gemma3); anything else would run as another model there.
void add_gemma3(GgufWriter& out, const ModelConfig& c, const std::string& p) {
  const auto refuse = [](const std::string& why) {
    throw std::invalid_argument("write_gguf_model: llama.cpp's gemma3 " + why);
  };
  if (c.sliding_window > 0) {
    const std::vector<bool> want = c.n_layers < 6 ? std::vector<bool>{} : gemma3_sliding_layers(c.n_layers);
    if (c.sliding_layers != want) refuse("slides every layer but each sixth; this model's layers differ");
    if (c.sliding_rope_theta != 10000.0f) refuse("rotates its sliding layers with base 10000");
    if (c.final_logit_softcap > 0.0f) refuse("leaves the final soft cap out when layers slide");
  }
  if (c.query_pre_attn_scalar != gemma3_query_scalar(c))
    refuse("scales scores by 1 / sqrt(" + std::to_string(gemma3_query_scalar(c)) + "), not by query_pre_attn_scalar " +
           std::to_string(c.query_pre_attn_scalar));
  out.add_metadata(p + "attention.sliding_window", uint32_t(c.sliding_window > 0 ? c.sliding_window : c.max_seq_len));
  if (c.final_logit_softcap > 0.0f) out.add_metadata(p + "final_logit_softcapping", c.final_logit_softcap);
}

// gpt-oss's window keys (read_gpt_oss): every layer but each n-th slides, n
// written when it is not llama.cpp's default 2; no window is one as long as
// the context.
void add_gpt_oss(GgufWriter& out, const ModelConfig& c, const std::string& p) {
  out.add_metadata(p + "attention.sliding_window", uint32_t(c.sliding_window > 0 ? c.sliding_window : c.max_seq_len));
  if (c.sliding_window == 0) return;
  const std::vector<bool> all(size_t(c.n_layers), true);
  const std::vector<bool>& sliding = c.sliding_layers.empty() ? all : c.sliding_layers;
  for (int pattern = 2; pattern <= c.n_layers + 1; ++pattern)
    if (gpt_oss_sliding_layers(c.n_layers, pattern) == sliding) {
      if (pattern != 2) out.add_metadata(p + "attention.sliding_window_pattern", uint32_t(pattern));
      return;
    }
  throw std::invalid_argument("write_gguf_model: llama.cpp's gpt-oss slides every layer but each n-th; this model's "
                              "sliding layers are not such a pattern");
}

// YaRN as llama.cpp reads it (llama_cpp_scaling), and the rounding it does
// not record (kYarnTruncateKey). llama.cpp's loader reads the ramp's betas
// for none of the architectures AstrAI writes (only grok's and mistral3's):
// it runs them with 32 and 1 whatever a file says, so other betas are refused.
void add_yarn(GgufWriter& out, const RopeScaling& s, const std::string& arch, const std::string& p) {
  if (s.beta_fast != 32.0f || s.beta_slow != 1.0f)
    throw std::invalid_argument("write_gguf_model: llama.cpp's " + arch +
                                " runs YaRN with beta_fast 32 and beta_slow 1, not " + std::to_string(s.beta_fast) +
                                " and " + std::to_string(s.beta_slow));
  out.add_metadata(p + "rope.scaling.type", std::string("yarn"));
  out.add_metadata(p + "rope.scaling.factor", s.factor);
  out.add_metadata(p + "rope.scaling.original_context_length", uint32_t(s.original_context));
  if (s.attention_factor > 0.0f) out.add_metadata(p + "rope.scaling.attn_factor", yarn_attn_factor_key(s));
  out.add_metadata(kYarnTruncateKey, s.truncate);
}

void add_config(GgufWriter& out, const ModelConfig& c, GgufDType dtype, const std::string& name) {
  const Architecture& row = architecture_of(c);
  const std::string arch = row.gguf_name, p = arch + ".";
  out.add_metadata("general.architecture", arch);
  out.add_metadata("general.name", name);
  out.add_metadata("general.file_type", file_type_of(dtype));
  out.add_metadata(p + "context_length", uint32_t(c.max_seq_len));
  out.add_metadata(p + "embedding_length", uint32_t(c.dim));
  out.add_metadata(p + "block_count", uint32_t(c.n_layers));
  out.add_metadata(p + "feed_forward_length", uint32_t(c.hidden_dim));
  out.add_metadata(p + "rope.dimension_count", uint32_t(c.head_dim()));
  out.add_metadata(p + "attention.head_count", uint32_t(c.n_heads));
  out.add_metadata(p + "attention.head_count_kv", uint32_t(c.n_kv_heads));
  if (c.explicit_head_dim > 0) {
    out.add_metadata(p + "attention.key_length", uint32_t(c.head_dim()));
    out.add_metadata(p + "attention.value_length", uint32_t(c.head_dim()));
  }
  out.add_metadata(p + "attention.layer_norm_rms_epsilon", c.norm_eps);
  out.add_metadata(p + "rope.freq_base", c.rope_theta);
  out.add_metadata(p + "vocab_size", uint32_t(c.vocab_size));
  if (c.options.moe != MoeModule::None) add_moe(out, c, row);
  // Llama 3.1 scaling: llama.cpp runs it from rope_freqs.weight (add_weights)
  // and must see none of its own scaling keys (read_rope_scaling).
  if (c.rope_scaling.enabled() && c.rope_scaling.kind == RopeScalingKind::Yarn) add_yarn(out, c.rope_scaling, arch, p);
  if (c.rope_scaling.enabled() && c.rope_scaling.kind == RopeScalingKind::Linear) {
    out.add_metadata(p + "rope.scaling.type", std::string("linear"));
    out.add_metadata(p + "rope.scaling.factor", c.rope_scaling.factor);
  }
  if (arch == "gemma3") {
    add_gemma3(out, c, p);
  } else if (arch == "gpt-oss") {
    add_gpt_oss(out, c, p);
  } else if (c.sliding_window > 0) {
    // Sliding windows: llama.cpp's key; its llama, qwen2 and qwen3 graphs do
    // not read it (they attend over everything), AstrAI's reader does.
    if (!c.sliding_layers.empty())
      throw std::invalid_argument("write_gguf_model: a model that mixes sliding and full layers is not written to GGUF "
                                  "for " + arch + " (llama.cpp's architecture fixes which layers slide)");
    out.add_metadata(p + "attention.sliding_window", uint32_t(c.sliding_window));
  }
  if (c.rope_scaling.enabled() && c.rope_scaling.kind == RopeScalingKind::Llama3) {
    if (arch != "llama")
      throw std::invalid_argument("write_gguf_model: llama.cpp's " + arch +
                                  " has no per-pair RoPE factors, so Llama 3.1 RoPE scaling cannot be written");
    out.add_metadata(kLlama3Keys + "factor", c.rope_scaling.factor);
    out.add_metadata(kLlama3Keys + "low_freq_factor", c.rope_scaling.low_freq_factor);
    out.add_metadata(kLlama3Keys + "high_freq_factor", c.rope_scaling.high_freq_factor);
    out.add_metadata(kLlama3Keys + "original_context_length", uint32_t(c.rope_scaling.original_context));
  }
}

// The tensors, each made only when the writer reaches it (gguf_writer.h):
// read from the source, moved to the layout llama.cpp runs the architecture
// with, encoded, written, freed.
void add_weights(GgufWriter& out, const ModelSource& source, RopeLayout layout, GgmlType wanted) {
  const ModelConfig& c = source.config;
  for_each_model_tensor(c, source.tied, [&](const ModelTensor& t) {
    // 1-D weights (norms, biases) and routers stay F32, as llama.cpp's
    // converter keeps them; a matrix's rows hold its last axis's weights.
    const GgmlType type = t.shape.size() == 1 || t.row->keep_f32 ? GgmlType::F32 : matrix_type_for(wanted, t.shape.back());
    out.add_tensor(t.gguf_name(), std::vector<uint64_t>(t.shape.rbegin(), t.shape.rend()), type,
                   [&source, &c, t, layout] {
                     std::vector<float> values = source.read(t);
                     to_rope_layout(values, t, c, layout);
                     if (c.options.norm_unit_offset && stores_unit_offset(t))
                       for (float& v : values) v += 1.0f;
                     return values;
                   });
  });
  // A tied classifier written out where llama.cpp's loader needs output.weight (qwen2moe).
  if (source.tied && architecture_of(c).gguf_output_required)
    for_each_model_tensor(c, /*tied=*/false, [&](const ModelTensor& t) {
      if (t.row->presence != Presence::Untied) return;
      const ModelTensor embedding = model_tensors(c, true).front();
      out.add_tensor(t.gguf_name(), std::vector<uint64_t>(t.shape.rbegin(), t.shape.rend()),
                     matrix_type_for(wanted, t.shape.back()), [&source, embedding] { return source.read(embedding); });
    });
  if (c.rope_scaling.enabled() && c.rope_scaling.kind == RopeScalingKind::Llama3) {  // Llama 3.1's per-pair factors
    const auto factors = rope_freq_factors(c);
    out.add_tensor("rope_freqs.weight", {factors.size()}, factors, GgmlType::F32);
  }
}

}  // namespace

GgufDType parse_gguf_dtype(const std::string& name) {
  if (name == "f32") return GgufDType::F32;
  if (name == "f16") return GgufDType::F16;
  if (name == "bf16") return GgufDType::BF16;
  if (name == "q8_0") return GgufDType::Q8_0;
  if (name == "q4_0") return GgufDType::Q4_0;
  if (name == "q4_k") return GgufDType::Q4_K;
  if (name == "q6_k") return GgufDType::Q6_K;
  throw std::invalid_argument("unknown GGUF tensor type '" + name + "' (choose f32, f16, bf16, q8_0, q4_0, q4_k or q6_k)");
}

std::string gguf_dtype_name(GgufDType dtype) {
  switch (dtype) {
    case GgufDType::F32: return "f32";
    case GgufDType::F16: return "f16";
    case GgufDType::BF16: return "bf16";
    case GgufDType::Q8_0: return "q8_0";
    case GgufDType::Q4_0: return "q4_0";
    case GgufDType::Q4_K: return "q4_k";
    case GgufDType::Q6_K: return "q6_k";
  }
  return "?";
}

GgufModelFile open_gguf_model(const std::string& path) {
  const auto g = std::make_shared<const GgufReader>(path);
  const ModelConfig config = read_config(*g);
  ModelSource weights = weights_source(g, config);  // the tensors checked before the tokenizer is read
  Tokenizer tokenizer = read_gguf_tokenizer(*g, config.vocab_size);
  const std::string name = g->has("general.name") ? g->get_string("general.name") : "";
  const std::string chat_template = g->has("tokenizer.chat_template") ? g->get_string("tokenizer.chat_template") : "";
  return GgufModelFile{std::move(weights), std::move(tokenizer), name, chat_template};
}

GgufModel read_gguf_model(const std::string& path) {
  GgufModelFile file = open_gguf_model(path);
  return GgufModel{read_model_weights(file.weights), std::move(file.tokenizer), std::move(file.name),
                   std::move(file.chat_template)};
}

void write_gguf_model(const std::string& path, const ModelSource& source, const Tokenizer& tokenizer, GgufDType dtype,
                      const std::string& name, const std::string& chat_template) {
  source.config.validate();
  if (tokenizer.vocab_size() != source.config.vocab_size)
    throw std::invalid_argument("write_gguf_model: tokenizer has " + std::to_string(tokenizer.vocab_size()) +
                                " pieces, the model's vocabulary " + std::to_string(source.config.vocab_size));
  // The layout llama.cpp runs the architecture with (see the top of this file).
  const RopeLayout layout = architecture_of(source.config).gguf_rope_layout;
  ModelConfig stored = source.config;
  stored.rope_layout = layout;
  GgufWriter out;
  add_config(out, stored, dtype, name);
  add_gguf_tokenizer(out, tokenizer);
  if (!chat_template.empty()) out.add_metadata("tokenizer.chat_template", chat_template);
  add_weights(out, source, layout, ggml_type_of(dtype));
  out.write(path);
}

void write_gguf_model(const std::string& path, const ModelWeights& weights, const Tokenizer& tokenizer,
                      GgufDType dtype, const std::string& name, const std::string& chat_template) {
  weights.validate_shapes();
  write_gguf_model(path, model_source(weights), tokenizer, dtype, name, chat_template);
}

}  // namespace astrai
