// config.json and generation_config.json of Hugging Face model folders (see hf_config.h).
#include "engine/model_files/hf/hf_config.h"

#include "engine/model_files/architectures.h"
#include "engine/model_files/hf/multimodal_text_config.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace astrai {
namespace {

using Json = nlohmann::json;

// Reads fields of one JSON object, each error naming the file and the field.
class Fields {
 public:
  Fields(const Json& object, std::string origin, std::string prefix = "")
      : object_(object), origin_(std::move(origin)), prefix_(std::move(prefix)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& problem) const {
    throw std::runtime_error(origin_ + ": \"" + prefix_ + key + "\" " + problem);
  }
  // The value, or nullptr when the key is absent or null (transformers treats both as "not set").
  const Json* find(const std::string& key) const {
    const auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }
  const Json& require(const std::string& key) const {
    const Json* v = find(key);
    if (!v) fail(key, "is missing");
    return *v;
  }
  int64_t integer(const std::string& key, const Json& v) const {
    if (!v.is_number_integer()) fail(key, "is " + v.dump() + ", expected an integer");
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
      fail(key, "is " + v.dump() + ", too large");
    return v.get<int64_t>();
  }
  // A count in [1, 2^31).
  int positive(const std::string& key, const Json& v) const {
    const int64_t n = integer(key, v);
    if (n <= 0 || n > std::numeric_limits<int32_t>::max())
      fail(key, "is " + std::to_string(n) + ", expected a positive 32-bit count");
    return int(n);
  }
  int positive(const std::string& key) const { return positive(key, require(key)); }
  std::optional<int> optional_positive(const std::string& key) const {
    const Json* v = find(key);
    return v ? std::optional<int>(positive(key, *v)) : std::nullopt;
  }
  double number(const std::string& key, const Json& v) const {
    if (!v.is_number()) fail(key, "is " + v.dump() + ", expected a number");
    const double x = v.get<double>();
    if (!std::isfinite(x)) fail(key, "is not finite");
    return x;
  }
  double number(const std::string& key) const { return number(key, require(key)); }
  std::optional<bool> optional_bool(const std::string& key) const {
    const Json* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) fail(key, "is " + v->dump() + ", expected true or false");
    return v->get<bool>();
  }
  std::optional<std::string> optional_string(const std::string& key) const {
    const Json* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) fail(key, "is " + v->dump() + ", expected a string");
    return v->get<std::string>();
  }
  // A token id in [0, vocab_size).
  int token_id(const std::string& key, const Json& v, int vocab_size) const {
    const int64_t id = integer(key, v);
    if (id < 0 || id >= vocab_size)
      fail(key, "holds token id " + std::to_string(id) + ", outside the vocabulary [0, " + std::to_string(vocab_size) +
                    ")");
    return int(id);
  }
  // An int, a list of ints, or absent/null.
  std::vector<int> token_ids(const std::string& key, int vocab_size) const {
    const Json* v = find(key);
    if (!v) return {};
    if (!v->is_array()) return {token_id(key, *v, vocab_size)};
    std::vector<int> ids;
    for (const auto& e : *v) ids.push_back(token_id(key, e, vocab_size));
    return ids;
  }
  std::optional<int> optional_token_id(const std::string& key, int vocab_size) const {
    const Json* v = find(key);
    return v ? std::optional<int>(token_id(key, *v, vocab_size)) : std::nullopt;
  }

 private:
  const Json& object_;
  std::string origin_;
  std::string prefix_;
};

// A float as the JSON number with the fewest digits that reads back as the
// same float (1e-05 rather than 9.999999747378752e-06), so written configs
// look like transformers' and still round-trip bit for bit.
double json_float(float x) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, x);
  double d = 0;
  std::from_chars(buf, r.ptr, d);
  return float(d) == x ? d : double(x);
}

Json parse_object(std::string_view text, const std::string& origin) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {
    throw std::runtime_error(origin + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object()) throw std::runtime_error(origin + ": not a JSON object");
  return j;
}

HfArchitecture read_architecture(const Fields& f) {
  const Json& list = f.require("architectures");
  if (!list.is_array() || list.empty() || !list[0].is_string())
    f.fail("architectures", "is " + list.dump() + ", expected a list holding the model class name");
  const std::string name = list[0].get<std::string>();
  for (const auto& a : architectures())
    if (name == a.hf_name) return a.id;
  f.fail("architectures", "names '" + name + "', which is not supported (supported: " + hf_architecture_names() + ")");
}

// One RoPE's scaling from a flat object `s` (rope_scaling, rope_parameters,
// or one layer type's entry of it). No scaling ("default"), Llama 3.1's
// "llama3", "linear" (Gemma 3) and "yarn" (gpt-oss; transformers' defaults
// for the fields it leaves out) are supported; every other type would
// silently give wrong positions, so it is refused by name, as are YaRN's
// DeepSeek fields.
void read_rope_scaling(const Fields& s, int max_seq_len, RopeScaling& r) {
  const auto type = s.find("rope_type") ? s.optional_string("rope_type") : s.optional_string("type");
  if (!type) s.fail("rope_type", "is missing");
  if (*type == "default") return;
  if (*type == "linear") {
    r.kind = RopeScalingKind::Linear;
    r.factor = float(s.number("factor"));
    return;
  }
  if (*type == "yarn") {
    r.kind = RopeScalingKind::Yarn;
    r.factor = float(s.number("factor"));
    r.original_context = s.optional_positive("original_max_position_embeddings").value_or(max_seq_len);
    if (s.find("beta_fast")) r.beta_fast = float(s.number("beta_fast"));
    if (s.find("beta_slow")) r.beta_slow = float(s.number("beta_slow"));
    r.truncate = s.optional_bool("truncate").value_or(true);
    if (const Json* a = s.find("attention_factor"); a && !a->is_null()) r.attention_factor = float(s.number("attention_factor"));
    for (const char* key : {"mscale", "mscale_all_dim"})
      if (const Json* v = s.find(key); v && !v->is_null()) s.fail(key, "is set; YaRN's DeepSeek magnitudes are not supported");
    return;
  }
  if (*type != "llama3")
    s.fail("rope_type", "is '" + *type + "'; only 'llama3', 'linear' and 'yarn' RoPE scaling (and none) are supported");
  r.factor = float(s.number("factor"));
  r.low_freq_factor = float(s.number("low_freq_factor"));
  r.high_freq_factor = float(s.number("high_freq_factor"));
  r.original_context = s.positive("original_max_position_embeddings");
}

// What read_rope found beyond rope_theta and rope_scaling: with transformers
// 5's entries per layer type, the sliding layers' own base (0: they rotate
// as the full layers do).
struct LayerTypeRope {
  bool per_layer_type = false;
  float sliding_theta = 0.0f;
};

// transformers 5's rope_parameters per layer type (Gemma 3):
//   {"full_attention": {"rope_type": "linear", "factor": 8, "rope_theta": 1e6},
//    "sliding_attention": {"rope_type": "default", "rope_theta": 10000}}
// The full layers' entry is the model's rope_theta and rope_scaling; the
// sliding layers' is their base when it is unscaled (ModelConfig's
// sliding_rope_theta), nothing when it equals the full layers', and refused
// otherwise: AstrAI's layers have no scaling of their own.
LayerTypeRope read_rope_per_layer_type(const Json& parameters, const std::string& origin, ModelConfig& c) {
  for (const auto& [key, value] : parameters.items())
    if (key != "full_attention" && key != "sliding_attention")
      Fields(parameters, origin, "rope_parameters.")
          .fail(key, "is a layer type AstrAI has no RoPE for (full_attention and sliding_attention are read)");
  const auto entry = [&](const char* type) {
    const Json& e = parameters.at(type);
    if (!e.is_object()) Fields(parameters, origin, "rope_parameters.").fail(type, "is not an object");
    return Fields(e, origin, std::string("rope_parameters.") + type + ".");
  };
  const Fields full = entry("full_attention");
  c.rope_theta = float(full.number("rope_theta"));
  read_rope_scaling(full, c.max_seq_len, c.rope_scaling);
  LayerTypeRope out{true, 0.0f};
  if (!parameters.contains("sliding_attention")) return out;
  const Fields sliding = entry("sliding_attention");
  const float theta = float(sliding.number("rope_theta"));
  RopeScaling scaling;
  read_rope_scaling(sliding, c.max_seq_len, scaling);
  if (theta == c.rope_theta && scaling == c.rope_scaling) return out;
  if (scaling.enabled())
    sliding.fail("rope_type", "scales the sliding layers unlike the full layers; AstrAI's sliding layers rotate "
                              "with a base of their own and no scaling, or as the full layers");
  out.sliding_theta = theta;
  return out;
}

// rope_theta and rope_scaling: transformers 4.x writes "rope_theta" and
// "rope_scaling" (null or {"rope_type": ...}); transformers 5 writes both into
// "rope_parameters", flat or (Gemma 3) one entry per layer type.
LayerTypeRope read_rope(const Fields& f, const std::string& origin, ModelConfig& c) {
  const Json* parameters = f.find("rope_parameters");
  if (parameters && !parameters->is_object()) f.fail("rope_parameters", "is not an object");
  const Json* scaling = f.find("rope_scaling");
  if (scaling && !scaling->is_object()) f.fail("rope_scaling", "is " + scaling->dump() + ", expected null or an object");
  if (parameters && scaling) f.fail("rope_scaling", "and \"rope_parameters\" are both given; expected one of them");
  if (parameters && parameters->contains("full_attention")) return read_rope_per_layer_type(*parameters, origin, c);
  // theta: top level, else inside rope_parameters.
  if (f.find("rope_theta")) {
    c.rope_theta = float(f.number("rope_theta"));
  } else if (parameters) {
    c.rope_theta = float(Fields(*parameters, origin, "rope_parameters.").number("rope_theta"));
  } else {
    f.require("rope_theta");
  }
  const Json* source = parameters ? parameters : scaling;
  if (source) read_rope_scaling(Fields(*source, origin, parameters ? "rope_parameters." : "rope_scaling."),
                                c.max_seq_len, c.rope_scaling);
  return {};
}

// Options of these architectures that AstrAI's forward pass does not have:
// refused by name rather than ignored. Returns whether the experts may be
// MXFP4 (gpt-oss's published quantization_config, the one quantized form read).
bool refuse_unsupported(const Fields& f, HfArchitecture arch, const std::string& origin) {
  const Architecture& row = architecture(arch);
  bool mxfp4 = false;
  if (const Json* q = f.find("quantization_config")) {
    if (!q->is_object()) f.fail("quantization_config", "is not an object");
    const auto method = Fields(*q, origin, "quantization_config.").optional_string("quant_method");
    mxfp4 = method == "mxfp4" && row.moe.gpt_oss_fields;
    if (!mxfp4)
      f.fail("quantization_config", "is present (quant_method " + method.value_or("unset") +
                                        "): quantized checkpoints are not supported (only bf16/f16/f32 weights, and "
                                        "gpt-oss's MXFP4 experts)");
  }
  for (const char* key : {"hidden_act", "hidden_activation"})
    if (const auto act = f.optional_string(key); act && *act != row.activation)
      f.fail(key, "is '" + *act + "'; " + row.hf_name + " supports only '" + row.activation + "'");
  // Gemma 2's attention soft cap (Gemma 3 sets it null).
  if (const Json* cap = f.find("attn_logit_softcapping"); cap && !cap->is_null())
    f.fail("attn_logit_softcapping", "is set: attention soft-capping (Gemma 2) is not supported");
  // Qwen 2's q/k/v biases are implied by its architecture; elsewhere
  // attention_bias would add biases to q, k, v and o.
  if (!architecture(arch).options.qkv_bias && f.optional_bool("attention_bias").value_or(false))
    f.fail("attention_bias", "is true: attention projection biases are only supported as Qwen 2's q/k/v biases");
  if (f.optional_bool("mlp_bias").value_or(false)) f.fail("mlp_bias", "is true: MLP biases are not supported");
  return mxfp4;
}

// The Mixture-of-Experts fields of a MoE row's config.json (MoeFields says
// which names it uses); what is absent takes transformers' default. The
// training-only fields (router_aux_loss_coef, router_jitter_noise,
// output_router_logits) change nothing at inference and are not read.
void read_moe(const Fields& f, const Architecture& row, ModelConfig& c) {
  const MoeFields& names = row.moe;
  MoeConfig& m = c.moe;
  m.n_experts = f.positive(names.n_experts);
  m.n_experts_used = f.positive("num_experts_per_tok");
  m.expert_hidden_dim = names.expert_hidden_dim ? f.positive(names.expert_hidden_dim) : c.hidden_dim;
  if (names.shared_expert_hidden_dim) m.shared_expert_hidden_dim = f.positive(names.shared_expert_hidden_dim);
  m.routing = ExpertRouting::SoftmaxTopK;
  m.norm_topk_prob = names.qwen_fields ? f.optional_bool("norm_topk_prob").value_or(false) : true;
  if (names.gpt_oss_fields) {  // GptOssConfig: swiglu_limit defaults to 7.0
    m.routing = ExpertRouting::TopKSoftmax;
    m.norm_topk_prob = false;  // TopKSoftmax's weights sum to 1 already
    m.swiglu_limit = f.find("swiglu_limit") ? float(f.number("swiglu_limit")) : 7.0f;
    if (!(m.swiglu_limit > 0.0f)) f.fail("swiglu_limit", "is not positive");
  }
  if (!names.qwen_fields) return;
  m.sparse_step = f.optional_positive("decoder_sparse_step").value_or(1);
  if (const Json* list = f.find("mlp_only_layers")) {
    if (!list->is_array()) f.fail("mlp_only_layers", "is " + list->dump() + ", expected a list of layer indices");
    for (const Json& l : *list) {
      const int64_t layer = f.integer("mlp_only_layers", l);
      if (layer < 0 || layer >= c.n_layers)
        f.fail("mlp_only_layers", "names layer " + std::to_string(layer) + "; the model has " +
                                      std::to_string(c.n_layers));
      m.dense_layers.push_back(int(layer));
    }
  }
}

// config.json's Mixture-of-Experts fields for `c` as `row` names them; throws
// when the config is not one `row` can express.
void write_moe(Json& j, const ModelConfig& c, const Architecture& row) {
  const MoeFields& names = row.moe;
  const MoeConfig& m = c.moe;
  auto refuse = [&](const std::string& what) {
    throw std::invalid_argument("hf_config_json: " + std::string(row.hf_name) + " " + what);
  };
  if (names.gpt_oss_fields) {
    if (m.routing != ExpertRouting::TopKSoftmax) refuse("routes top-k then softmax, not softmax then top-k");
    if (!(m.swiglu_limit > 0.0f)) refuse("clamps its SwiGLU (swiglu_limit); this model does not");
    j["swiglu_limit"] = json_float(m.swiglu_limit);
  } else {
    if (m.routing != ExpertRouting::SoftmaxTopK) refuse("routes softmax then top-k, not top-k then softmax");
    if (m.swiglu_limit > 0.0f) refuse("has no clamped SwiGLU (swiglu_limit)");
  }
  if (!names.expert_hidden_dim && m.expert_hidden_dim != c.hidden_dim)
    refuse("experts are intermediate_size wide (" + std::to_string(c.hidden_dim) + "), not " +
           std::to_string(m.expert_hidden_dim));
  if (!names.qwen_fields && (m.sparse_step != 1 || !m.dense_layers.empty())) refuse("has experts in every layer");
  if (!names.qwen_fields && !names.gpt_oss_fields && !m.norm_topk_prob) refuse("always renormalises the top-k weights");
  j[names.n_experts] = m.n_experts;
  j["num_experts_per_tok"] = m.n_experts_used;
  if (names.expert_hidden_dim) j[names.expert_hidden_dim] = m.expert_hidden_dim;
  if (names.shared_expert_hidden_dim) j[names.shared_expert_hidden_dim] = m.shared_expert_hidden_dim;
  if (names.qwen_fields) {
    j["norm_topk_prob"] = m.norm_topk_prob;
    j["decoder_sparse_step"] = m.sparse_step;
    j["mlp_only_layers"] = m.dense_layers;
  }
}

}  // namespace

std::string hf_architecture_name(HfArchitecture arch) { return architecture(arch).hf_name; }

HfArchitecture hf_architecture_for(const ModelConfig& config) {
  if (config.options.qkv_bias && config.options.qk_norm)
    throw std::invalid_argument("no Hugging Face architecture has both q/k/v biases and q/k norms");
  if (const Architecture* a = architecture_with_options(config)) return a->id;
  throw std::invalid_argument("no Hugging Face architecture has the options of " + config.describe());
}

namespace {

// Sliding-window attention (ModelConfig::sliding_window). When config.json's
// window applies is the row's rule; which layers slide is layer_types when
// the file has it (transformers >= 4.54 writes it), else the family's rule:
// every layer (Mistral, Mixtral), or the layers from max_window_layers on
// (Qwen 2 / 3, transformers' default 28). A window at least as long as the
// context is full attention, and is left out.
void read_sliding_window(const Fields& f, const Architecture& row, ModelConfig& c) {
  const bool applies = row.sliding_window == SlidingWindowRule::WhenSet ||
                       row.sliding_window == SlidingWindowRule::Pattern ||
                       (row.sliding_window == SlidingWindowRule::WhenUseSlidingWindow &&
                        f.optional_bool("use_sliding_window").value_or(false));
  if (!applies) return;
  const auto window = f.optional_positive("sliding_window");
  if (!window || *window >= c.max_seq_len) return;
  std::vector<bool> sliding(size_t(c.n_layers), true);
  if (const Json* types = f.find("layer_types"); types && !types->is_null()) {
    if (!types->is_array() || types->size() != size_t(c.n_layers))
      f.fail("layer_types", "is " + types->dump() + ", expected one entry per layer (" + std::to_string(c.n_layers) + ")");
    for (size_t l = 0; l < types->size(); ++l) {
      const Json& t = (*types)[l];
      if (t != "sliding_attention" && t != "full_attention")
        f.fail("layer_types", "entry " + std::to_string(l) + " is " + t.dump() +
                                  ", expected \"sliding_attention\" or \"full_attention\"");
      sliding[l] = t == "sliding_attention";
    }
  } else if (row.sliding_window == SlidingWindowRule::Pattern) {
    const int pattern = f.optional_positive("sliding_window_pattern").value_or(row.default_sliding_pattern);
    sliding = sliding_layers_by_pattern(c.n_layers, pattern);
  } else if (row.sliding_window == SlidingWindowRule::WhenUseSlidingWindow) {
    int first = 28;
    if (const Json* v = f.find("max_window_layers")) {
      const int64_t n = f.integer("max_window_layers", *v);
      if (n < 0) f.fail("max_window_layers", "is " + std::to_string(n) + ", expected a layer count");
      first = int(std::min<int64_t>(n, c.n_layers));
    }
    for (int l = 0; l < c.n_layers; ++l) sliding[size_t(l)] = l >= first;
  }
  if (std::none_of(sliding.begin(), sliding.end(), [](bool s) { return s; })) return;
  c.sliding_window = *window;
  if (std::find(sliding.begin(), sliding.end(), false) != sliding.end()) c.sliding_layers = sliding;
}

// Gemma 3's fields beyond the shared ones: the sliding layers' RoPE base
// (rope_local_base_freq, default 10000; only when a layer slides, and not
// when transformers 5's rope_parameters gave one per layer type), the
// attention's query_pre_attn_scalar (default 256) and the final soft cap.
void read_gemma(const Fields& f, ModelConfig& c, const LayerTypeRope& rope) {
  if (c.sliding_window > 0 && !rope.per_layer_type) {
    const Json* base = f.find("rope_local_base_freq");
    c.sliding_rope_theta = base && !base->is_null() ? float(f.number("rope_local_base_freq")) : 10000.0f;
  }
  const Json* scalar = f.find("query_pre_attn_scalar");
  c.query_pre_attn_scalar = scalar && !scalar->is_null() ? float(f.number("query_pre_attn_scalar")) : 256.0f;
  if (const Json* cap = f.find("final_logit_softcapping"); cap && !cap->is_null())
    c.final_logit_softcap = float(f.number("final_logit_softcapping"));
}

}  // namespace

HfModelConfig parse_hf_config(std::string_view json_text, const std::string& origin) {
  const Json outer = parse_object(json_text, origin);
  // Gemma 3's image-and-text folders: their text model (multimodal_text_config.h).
  const std::optional<Json> text_model = text_model_config(outer, origin);
  const Json& j = text_model ? *text_model : outer;
  const Fields f(j, origin, text_model ? "text_config." : "");
  HfModelConfig out;
  out.multimodal_text = text_model.has_value();
  out.architecture = read_architecture(f);
  out.mxfp4_experts = refuse_unsupported(f, out.architecture, origin);
  ModelConfig& c = out.config;
  c.dim = f.positive("hidden_size");
  c.hidden_dim = f.positive("intermediate_size");
  c.n_layers = f.positive("num_hidden_layers");
  c.n_heads = f.positive("num_attention_heads");
  c.n_kv_heads = f.optional_positive("num_key_value_heads").value_or(c.n_heads);
  c.vocab_size = f.positive("vocab_size");
  c.max_seq_len = f.positive("max_position_embeddings");
  c.norm_eps = float(f.number("rms_norm_eps"));
  const LayerTypeRope rope = read_rope(f, origin, c);
  c.rope_layout = RopeLayout::RotateHalf;  // Hugging Face's q/k rows pair x[i] with x[i + head_dim/2]
  if (const auto head_dim = f.optional_positive("head_dim")) c.explicit_head_dim = *head_dim;
  const Architecture& row = architecture(out.architecture);
  if (row.head_dim_required && c.explicit_head_dim == 0)
    f.require("head_dim");  // Qwen3Config's default (128) is not hidden_size / heads: make it explicit
  c.options = row.options;
  if (row.options.moe != MoeModule::None) read_moe(f, row, c);
  out.tie_word_embeddings = f.optional_bool("tie_word_embeddings").value_or(row.tied_by_default);

  read_sliding_window(f, row, c);
  if (rope.per_layer_type && c.sliding_window > 0) c.sliding_rope_theta = rope.sliding_theta;
  if (row.gemma_fields) read_gemma(f, c, rope);

  for (const char* key : {"torch_dtype", "dtype"}) {
    if (const auto dtype = f.optional_string(key)) {
      if (*dtype != "bfloat16" && *dtype != "float16" && *dtype != "float32")
        f.fail(key, "is '" + *dtype + "'; only bfloat16, float16 and float32 models are supported");
      out.torch_dtype = *dtype;
    }
  }
  try {
    c.validate();
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(origin + ": describes an invalid model (" + c.describe() + "): " + e.what());
  }
  out.eos_token_ids = f.token_ids("eos_token_id", c.vocab_size);
  out.bos_token_id = f.optional_token_id("bos_token_id", c.vocab_size);
  return out;
}

HfGenerationConfig parse_hf_generation_config(std::string_view json_text, const std::string& origin, int vocab_size) {
  const Json j = parse_object(json_text, origin);
  const Fields f(j, origin);
  HfGenerationConfig g;
  g.eos_token_ids = f.token_ids("eos_token_id", vocab_size);
  g.bos_token_id = f.optional_token_id("bos_token_id", vocab_size);
  g.do_sample = f.optional_bool("do_sample");
  if (const Json* v = f.find("temperature")) {
    const double t = f.number("temperature", *v);
    if (t < 0) f.fail("temperature", "is negative");
    g.temperature = float(t);
  }
  if (const Json* v = f.find("top_p")) {
    const double p = f.number("top_p", *v);
    if (!(p > 0 && p <= 1)) f.fail("top_p", "is " + v->dump() + ", expected a number in (0, 1]");
    g.top_p = float(p);
  }
  if (const Json* v = f.find("top_k")) {
    const int64_t k = f.integer("top_k", *v);
    if (k < 0 || k > std::numeric_limits<int32_t>::max()) f.fail("top_k", "is " + v->dump() + ", expected 0 or more");
    g.top_k = int(k);
  }
  if (const Json* v = f.find("max_new_tokens")) {
    const int64_t n = f.integer("max_new_tokens", *v);
    if (n < 1 || n > std::numeric_limits<int32_t>::max()) f.fail("max_new_tokens", "is " + v->dump() + ", expected 1 or more");
    g.max_new_tokens = int(n);
  }
  return g;
}

namespace {

// The window as the row's config class reads it back (read_sliding_window).
void write_sliding_window(Json& j, const ModelConfig& c, const Architecture& row) {
  if (row.sliding_window == SlidingWindowRule::Never)
    throw std::invalid_argument(std::string("hf_config_json: ") + row.hf_name + " has no sliding window");
  j["sliding_window"] = c.sliding_window;
  std::vector<bool> sliding = c.sliding_layers;
  if (sliding.empty()) sliding.assign(size_t(c.n_layers), true);
  if (row.sliding_window == SlidingWindowRule::WhenSet) {
    if (std::find(sliding.begin(), sliding.end(), false) != sliding.end())
      throw std::invalid_argument(std::string("hf_config_json: ") + row.hf_name +
                                  " slides every layer or none; this model mixes sliding and full layers");
    return;
  }
  Json types = Json::array();
  for (bool s : sliding) types.push_back(s ? "sliding_attention" : "full_attention");
  j["layer_types"] = types;
  if (row.sliding_window == SlidingWindowRule::Pattern) return;
  j["use_sliding_window"] = true;
  // Older readers (no layer_types) slide the layers from max_window_layers on.
  const auto first = std::find(sliding.begin(), sliding.end(), true) - sliding.begin();
  j["max_window_layers"] = first;
}

// read_gemma's fields, and a window Gemma's class always applies: none
// is a window as long as the context.
void write_gemma(Json& j, const ModelConfig& c) {
  if (c.sliding_window == 0) j["sliding_window"] = c.max_seq_len;
  j["rope_local_base_freq"] = json_float(c.sliding_rope_theta > 0.0f ? c.sliding_rope_theta : c.rope_theta);
  j["query_pre_attn_scalar"] = json_float(c.query_pre_attn_scalar > 0.0f ? c.query_pre_attn_scalar : float(c.head_dim()));
  j["final_logit_softcapping"] = c.final_logit_softcap > 0.0f ? Json(json_float(c.final_logit_softcap)) : Json(nullptr);
}

}  // namespace

std::string hf_config_json(const ModelConfig& c, HfArchitecture arch, bool tie_word_embeddings,
                           const std::string& torch_dtype) {
  c.validate();
  const Architecture& names = architecture(arch);
  // Options, not ids: Mistral's row has Llama's (hf_architecture_for gives Llama).
  if (names.options != c.options)
    throw std::invalid_argument("hf_config_json: a model of " + c.describe() + " is not a " + hf_architecture_name(arch) +
                                " (its layers have other options)");
  if (c.rope_layout != RopeLayout::RotateHalf)
    throw std::invalid_argument("hf_config_json: Hugging Face checkpoints use rotate-half RoPE; this model's q/k rows "
                                "pair adjacent dimensions");
  Json j = Json::object();
  j["architectures"] = {names.hf_name};
  j["model_type"] = names.model_type;
  j["hidden_size"] = c.dim;
  j["intermediate_size"] = c.hidden_dim;
  j["num_hidden_layers"] = c.n_layers;
  j["num_attention_heads"] = c.n_heads;
  j["num_key_value_heads"] = c.n_kv_heads;
  j["vocab_size"] = c.vocab_size;
  j["max_position_embeddings"] = c.max_seq_len;
  j["rms_norm_eps"] = json_float(c.norm_eps);
  j["rope_theta"] = json_float(c.rope_theta);
  j[names.activation_field] = names.activation;
  j["tie_word_embeddings"] = tie_word_embeddings;
  if (!torch_dtype.empty()) j["torch_dtype"] = torch_dtype;
  if (c.explicit_head_dim > 0 || names.head_dim_required) j["head_dim"] = c.head_dim();
  const RopeScaling& r = c.rope_scaling;
  if (r.enabled() && r.kind == RopeScalingKind::Linear) {
    j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", json_float(r.factor)}};
  } else if (r.enabled() && r.kind == RopeScalingKind::Yarn) {
    j["rope_scaling"] = {{"rope_type", "yarn"},
                         {"factor", json_float(r.factor)},
                         {"original_max_position_embeddings", r.original_context},
                         {"beta_fast", json_float(r.beta_fast)},
                         {"beta_slow", json_float(r.beta_slow)},
                         {"truncate", r.truncate}};
    if (r.attention_factor > 0.0f) j["rope_scaling"]["attention_factor"] = json_float(r.attention_factor);
  } else if (r.enabled()) {
    j["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", json_float(r.factor)},
                         {"low_freq_factor", json_float(r.low_freq_factor)},
                         {"high_freq_factor", json_float(r.high_freq_factor)},
                         {"original_max_position_embeddings", r.original_context}};
  } else {
    j["rope_scaling"] = nullptr;
  }
  j.update(Json::parse(names.config_json_extras));
  if (c.options.moe != MoeModule::None) write_moe(j, c, names);
  if (c.sliding_window > 0) write_sliding_window(j, c, names);
  if (names.gemma_fields) write_gemma(j, c);
  return j.dump(2) + "\n";
}

std::string hf_generation_config_json(const HfGenerationConfig& g) {
  Json j = Json::object();
  if (g.bos_token_id) j["bos_token_id"] = *g.bos_token_id;
  if (g.eos_token_ids.size() == 1) j["eos_token_id"] = g.eos_token_ids[0];
  if (g.eos_token_ids.size() > 1) j["eos_token_id"] = g.eos_token_ids;
  if (g.do_sample) j["do_sample"] = *g.do_sample;
  if (g.temperature) j["temperature"] = json_float(*g.temperature);
  if (g.top_p) j["top_p"] = json_float(*g.top_p);
  if (g.top_k) j["top_k"] = *g.top_k;
  if (g.max_new_tokens) j["max_new_tokens"] = *g.max_new_tokens;
  return j.dump(2) + "\n";
}

}  // namespace astrai
