// Hugging Face model folders: random models of each architecture (small odd
// shapes, optional q/k/v biases and q/k norms filled in, tied or not) written
// as a folder in f32/f16/bf16, single-file and sharded, read back equal (f32
// bit for bit, 16-bit types equal to the rounding computed independently in
// safetensors_test_files.h); the files carry Hugging Face's names, shapes and
// index; what vLLM ignores is ignored and everything else unexpected, missing
// or misshapen is refused naming the tensor; a folder whose safetensors bytes
// are damaged fails cleanly or loads a consistent model.
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <bit>
#include <filesystem>
#include <functional>
#include <random>

#include <nlohmann/json.hpp>

#include "engine/model_files/architectures.h"
#include "engine/model_files/hf/hf_folder.h"
#include "engine/model_files/hf/safetensors_writer.h"
#include "reference/splitmix64.h"
#include "reference/synthetic_model.h"
#include "tests/engine/model_files/gguf_test_files.h"
#include "tests/engine/model_files/safetensors_test_files.h"

using namespace astrai;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& stem) {
  const fs::path dir = astrai::test::scratch_file(stem, "");
  fs::remove_all(dir);
  return dir;
}

xt::xtensor<float, 1> random_vector(uint64_t& state, size_t n, float lo, float hi) {
  xt::xtensor<float, 1> v = xt::xtensor<float, 1>::from_shape({n});
  for (auto& x : v) x = lo + (hi - lo) * float(splitmix64_next(state) >> 40) / 16777216.0f;
  return v;
}

// Synthetic weights for `c` with the optional tensors its options call for.
ModelWeights weights_for(const ModelConfig& c, uint64_t seed, bool tied) {
  ModelWeights w = make_synthetic_weights(c, seed);
  uint64_t state = seed ^ 0x9E3779B97F4A7C15ull;
  for (auto& L : w.layers) {
    if (c.options.qkv_bias) {
      L.bq = random_vector(state, size_t(c.q_dim()), -1.0f, 1.0f);
      L.bk = random_vector(state, size_t(c.kv_dim()), -1.0f, 1.0f);
      L.bv = random_vector(state, size_t(c.kv_dim()), -1.0f, 1.0f);
    }
    if (c.options.qk_norm) {
      L.q_norm = random_vector(state, size_t(c.head_dim()), 0.5f, 1.5f);
      L.k_norm = random_vector(state, size_t(c.head_dim()), 0.5f, 1.5f);
    }
  }
  // Values that stress 16-bit rounding: beyond half's range, subnormal in
  // half, negative zero, a tie in both formats, near float's largest.
  w.layers[0].wq(0, 0) = 70000.0f;
  w.layers[0].wk(0, 0) = 1e-8f;
  w.layers[0].wv(0, 0) = -0.0f;
  (w.layers[0].w_up.size() ? w.layers[0].w_up(0, 0) : w.layers[0].exp_up(0, 0, 0)) = 1.0f + 1.0f / 2048.0f;
  w.final_norm(0) = 1.0f + 1.0f / 256.0f;
  w.token_embedding(0, 0) = -3e38f;
  if (tied) w.classifier = w.token_embedding;
  return w;
}

ModelConfig config_for(HfArchitecture arch, int kv_heads, int group, int half_head, int hidden, int layers, int vocab,
                       int ctx) {
  ModelConfig c;
  c.n_kv_heads = kv_heads;
  c.n_heads = kv_heads * group;
  c.dim = c.n_heads * half_head * 2;
  c.hidden_dim = hidden;
  c.n_layers = layers;
  c.vocab_size = vocab;
  c.max_seq_len = ctx;
  c.rope_layout = RopeLayout::RotateHalf;
  c.options.qkv_bias = arch == HfArchitecture::Qwen2 || arch == HfArchitecture::Qwen2Moe;
  c.options.qk_norm = arch == HfArchitecture::Qwen3 || arch == HfArchitecture::Qwen3Moe || arch == HfArchitecture::Gemma3;
  if (arch == HfArchitecture::Gemma3) {  // Gemma 3's block: four norms a layer, stored as offsets from 1
    c.options.norm_unit_offset = c.options.sandwich_norms = c.options.gelu_tanh = c.options.scaled_embedding = true;
    c.query_pre_attn_scalar = float(2 * half_head);
  }
  // Mixture-of-Experts: 3 experts, top 2; Qwen's with a dense first layer
  // (mlp_only_layers) and Qwen 2 MoE's shared expert.
  if (arch == HfArchitecture::Mixtral) {
    c.options.moe = MoeModule::BlockSparseMoe;
    c.moe = {.n_experts = 3, .n_experts_used = 2, .expert_hidden_dim = hidden, .norm_topk_prob = true};
  }
  if (arch == HfArchitecture::GptOss) {  // biases everywhere, sinks, every other layer sliding
    c.options = {.qkv_bias = true, .moe = MoeModule::GptOss, .router_bias = true, .attention_sinks = true,
                 .expert_biases = true, .out_bias = true};
    c.moe = {.n_experts = 3, .n_experts_used = 2, .expert_hidden_dim = hidden, .routing = ExpertRouting::TopKSoftmax,
             .swiglu_limit = 7.0f};
    if (ctx > 3) {
      c.sliding_window = 3;
      for (int l = 0; l < layers; ++l) c.sliding_layers.push_back(l % 2 == 0);
      if (layers == 1) c.sliding_layers.clear();  // the one layer slides
    }
  }
  if (arch == HfArchitecture::Qwen2Moe || arch == HfArchitecture::Qwen3Moe) {
    c.options.moe = MoeModule::Mlp;
    c.options.shared_expert = arch == HfArchitecture::Qwen2Moe;
    c.moe = {.n_experts = 3, .n_experts_used = 2, .expert_hidden_dim = hidden + 1,
             .shared_expert_hidden_dim = c.options.shared_expert ? hidden + 2 : 0, .dense_layers = {0}};
  }
  return c;
}

// "" when every tensor of `got` has the bits of stored_as(original element,
// dtype), else the first difference. Every tensor is compared, the optional
// ones too (empty ones compare equal only when both are empty).
std::string compare_all(const ModelWeights& got, const ModelWeights& original, SafetensorsDType dtype) {
  std::string diff;
  auto compare = [&](const std::string& name, const auto& g, const auto& o) {
    if (!diff.empty()) return;
    if (g.shape() != o.shape()) {
      diff = name + ": shapes differ";
      return;
    }
    for (size_t i = 0; i < g.size(); ++i) {
      const float want = astrai::test::stored_as(o.data()[i], dtype);
      if (std::bit_cast<uint32_t>(g.data()[i]) != std::bit_cast<uint32_t>(want)) {
        diff = name + "[" + std::to_string(i) + "]: got " + std::to_string(g.data()[i]) + ", expected " +
               std::to_string(want);
        return;
      }
    }
  };
  if (got.layers.size() != original.layers.size()) return "layer counts differ";
  compare("token_embedding", got.token_embedding, original.token_embedding);
  for (size_t l = 0; l < got.layers.size(); ++l) {
    const auto& g = got.layers[l];
    const auto& o = original.layers[l];
    const std::string p = "layer " + std::to_string(l) + " ";
    compare(p + "attn_norm", g.attn_norm, o.attn_norm);
    compare(p + "wq", g.wq, o.wq);
    compare(p + "wk", g.wk, o.wk);
    compare(p + "wv", g.wv, o.wv);
    compare(p + "wo", g.wo, o.wo);
    compare(p + "bq", g.bq, o.bq);
    compare(p + "bk", g.bk, o.bk);
    compare(p + "bv", g.bv, o.bv);
    compare(p + "bo", g.bo, o.bo);
    compare(p + "sinks", g.sinks, o.sinks);
    compare(p + "post_attn_norm", g.post_attn_norm, o.post_attn_norm);
    compare(p + "post_ffn_norm", g.post_ffn_norm, o.post_ffn_norm);
    compare(p + "q_norm", g.q_norm, o.q_norm);
    compare(p + "k_norm", g.k_norm, o.k_norm);
    compare(p + "ffn_norm", g.ffn_norm, o.ffn_norm);
    compare(p + "w_gate", g.w_gate, o.w_gate);
    compare(p + "w_up", g.w_up, o.w_up);
    compare(p + "w_down", g.w_down, o.w_down);
    compare(p + "router", g.router, o.router);
    compare(p + "exp_gate", g.exp_gate, o.exp_gate);
    compare(p + "exp_up", g.exp_up, o.exp_up);
    compare(p + "exp_down", g.exp_down, o.exp_down);
    compare(p + "router_bias", g.router_bias, o.router_bias);
    compare(p + "exp_gate_bias", g.exp_gate_bias, o.exp_gate_bias);
    compare(p + "exp_up_bias", g.exp_up_bias, o.exp_up_bias);
    compare(p + "exp_down_bias", g.exp_down_bias, o.exp_down_bias);
    compare(p + "shexp_gate_inp", g.shexp_gate_inp, o.shexp_gate_inp);
    compare(p + "shexp_gate", g.shexp_gate, o.shexp_gate);
    compare(p + "shexp_up", g.shexp_up, o.shexp_up);
    compare(p + "shexp_down", g.shexp_down, o.shexp_down);
  }
  compare("final_norm", got.final_norm, original.final_norm);
  compare("classifier", got.classifier, original.classifier);
  return diff;
}

bool same_config(const ModelConfig& a, const ModelConfig& b) {
  return a.dim == b.dim && a.hidden_dim == b.hidden_dim && a.n_layers == b.n_layers && a.n_heads == b.n_heads &&
         a.n_kv_heads == b.n_kv_heads && a.vocab_size == b.vocab_size && a.max_seq_len == b.max_seq_len &&
         a.rope_theta == b.rope_theta && a.norm_eps == b.norm_eps && a.rope_layout == b.rope_layout &&
         a.explicit_head_dim == b.explicit_head_dim && a.options == b.options && a.moe == b.moe &&
         a.rope_scaling == b.rope_scaling && a.sliding_window == b.sliding_window &&
         a.sliding_layers == b.sliding_layers && a.sliding_rope_theta == b.sliding_rope_theta &&
         a.query_pre_attn_scalar == b.query_pre_attn_scalar && a.final_logit_softcap == b.final_logit_softcap;
}

// A small model of `arch` written as a folder; returns its path.
fs::path small_folder(HfArchitecture arch, bool tied, const HfWriteOptions& options = {}) {
  const ModelConfig c = config_for(arch, 1, 2, 2, 6, 2, 11, 16);
  const fs::path dir = fresh_dir("small");
  HfWriteOptions o = options;
  o.architecture = arch;
  write_hf_folder(dir.string(), weights_for(c, 5, tied), o);
  return dir;
}

// Rewrites a safetensors file through the reader and writer (as F32), letting
// `edit` change the tensors: malformed folders made from valid ones.
struct TensorCopy {
  std::string name;
  std::vector<uint64_t> shape;
  std::vector<float> values;
};
void rewrite(const fs::path& file, const std::function<void(std::vector<TensorCopy>&)>& edit) {
  std::vector<TensorCopy> tensors;
  {
    const SafetensorsFile st(file.string());
    for (const auto& t : st.tensors()) {
      std::vector<float> v(size_t(t.n_elements));
      st.read_tensor_floats(t, v);
      tensors.push_back({t.name, t.shape, std::move(v)});
    }
  }
  edit(tensors);
  SafetensorsWriter w;
  for (const auto& t : tensors) w.add_tensor(t.name, t.shape, t.values, SafetensorsDType::F32);
  w.write(file.string());
}

std::string load_error(const fs::path& dir) {
  try {
    (void)load_hf_folder(dir.string());
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

HfWriteOptions with_dtype(SafetensorsDType dtype) {
  HfWriteOptions o;
  o.dtype = dtype;
  return o;
}

HfWriteOptions sharded_at(uint64_t max_shard_bytes) {
  HfWriteOptions o;
  o.max_shard_bytes = max_shard_bytes;
  return o;
}

nlohmann::json read_json(const fs::path& path) { return nlohmann::json::parse(astrai::test::read_file(path)); }

}  // namespace

TEST_CASE("random models of every architecture survive folder write -> read", "[hf_folder]") {
  rc::prop("f32 bit for bit, f16/bf16 as rounded independently, single file or sharded", [] {
    const auto arch = *rc::gen::element(HfArchitecture::Llama, HfArchitecture::Mistral, HfArchitecture::Qwen2,
                                        HfArchitecture::Qwen3, HfArchitecture::Mixtral, HfArchitecture::Qwen2Moe,
                                        HfArchitecture::Qwen3Moe, HfArchitecture::Gemma3, HfArchitecture::GptOss);
    ModelConfig c = config_for(arch, *rc::gen::inRange(1, 4), *rc::gen::inRange(1, 4), *rc::gen::inRange(1, 5),
                               *rc::gen::inRange(1, 26), *rc::gen::inRange(1, 4), *rc::gen::inRange(2, 40),
                               *rc::gen::inRange(1, 65));
    c.rope_theta = *rc::gen::element(10000.0f, 500000.0f, 1234.5f);
    c.norm_eps = *rc::gen::element(1e-5f, 1e-6f, 3.3e-7f);
    // Qwen 3 always names its head_dim; the others may (an odd-sized explicit one too).
    if (architecture(arch).head_dim_required || *rc::gen::arbitrary<bool>())
      c.explicit_head_dim = 2 * *rc::gen::inRange(1, 6);
    if (*rc::gen::arbitrary<bool>())
      c.rope_scaling = {.factor = 8.0f, .low_freq_factor = 1.0f, .high_freq_factor = 4.0f,
                        .original_context = *rc::gen::inRange(1, 100)};
    const bool tied = *rc::gen::arbitrary<bool>();
    const ModelWeights original = weights_for(c, *rc::gen::arbitrary<uint64_t>(), tied);
    HfWriteOptions options;
    options.architecture = arch;
    options.dtype = *rc::gen::element(SafetensorsDType::F32, SafetensorsDType::F16, SafetensorsDType::BF16);
    options.max_shard_bytes = *rc::gen::element<uint64_t>(0, 1, 100, 1000, 100000);
    const fs::path dir = fresh_dir("roundtrip");
    write_hf_folder(dir.string(), original, options);
    const HfModelFolder folder = load_hf_folder(dir.string());
    RC_ASSERT(folder.architecture == arch);
    RC_ASSERT(same_config(folder.weights.config, c));
    folder.weights.validate_shapes();
    const std::string diff = compare_all(folder.weights, original, options.dtype);
    RC_LOG() << diff;
    RC_ASSERT(diff.empty());
    RC_ASSERT(fs::exists(dir / "model.safetensors") == (options.max_shard_bytes == 0));
    RC_ASSERT(fs::exists(dir / "model.safetensors.index.json") == (options.max_shard_bytes > 0));
    fs::remove_all(dir);
  });
}

TEST_CASE("written folders carry Hugging Face's names, shapes, dtypes and index", "[hf_folder]") {
  // Qwen 2, untied, bf16, sharded at 300 bytes.
  HfWriteOptions options;
  options.max_shard_bytes = 300;
  options.generation = HfGenerationConfig{.eos_token_ids = {3, 4}, .bos_token_id = 1, .do_sample = true,
                                          .temperature = 0.7f, .top_p = 0.8f, .top_k = 20};
  const fs::path dir = small_folder(HfArchitecture::Qwen2, false, options);
  const auto config = read_json(dir / "config.json");
  CHECK(config["architectures"] == nlohmann::json::array({"Qwen2ForCausalLM"}));
  CHECK(config["hidden_size"] == 8);
  CHECK(config["num_attention_heads"] == 2);
  CHECK(config["num_key_value_heads"] == 1);
  CHECK(config["torch_dtype"] == "bfloat16");
  CHECK(config["tie_word_embeddings"] == false);
  const auto index = read_json(dir / "model.safetensors.index.json");
  const auto& map = index["weight_map"];
  // 1 embedding + 2 layers x 12 (2 norms, q/k/v/o, q/k/v biases, gate/up/down) + norm + lm_head.
  CHECK(map.size() == 1 + 2 * 12 + 1 + 1);
  uint64_t total = 0;
  std::set<std::string> shards;
  for (const auto& [name, file] : map.items()) shards.insert(file.get<std::string>());
  CHECK(shards.size() > 2);
  for (const auto& file : shards) {
    CHECK_THAT(file, Contains("-of-0000"));
    const SafetensorsFile st((dir / file).string());
    CHECK(st.metadata().at("format") == "pt");
    uint64_t bytes = 0;
    for (const auto& t : st.tensors()) {
      CHECK(map[t.name] == file);
      CHECK(t.dtype == SafetensorsDType::BF16);
      bytes += t.end - t.begin;
    }
    // A shard is over the limit only when it holds one tensor that alone is.
    CHECK((bytes <= 300 || st.tensors().size() == 1));
    total += bytes;
  }
  CHECK(index["metadata"]["total_size"] == total);
  auto shape_of = [&](const std::string& name) {
    const SafetensorsFile st((dir / map[name].get<std::string>()).string());
    return st.find_tensor(name)->shape;
  };
  using S = std::vector<uint64_t>;
  CHECK(shape_of("model.embed_tokens.weight") == S{11, 8});
  CHECK(shape_of("model.layers.1.self_attn.q_proj.weight") == S{8, 8});
  CHECK(shape_of("model.layers.1.self_attn.k_proj.weight") == S{4, 8});
  CHECK(shape_of("model.layers.1.self_attn.q_proj.bias") == S{8});
  CHECK(shape_of("model.layers.1.self_attn.v_proj.bias") == S{4});
  CHECK(shape_of("model.layers.1.self_attn.o_proj.weight") == S{8, 8});
  CHECK(shape_of("model.layers.1.mlp.gate_proj.weight") == S{6, 8});
  CHECK(shape_of("model.layers.1.mlp.down_proj.weight") == S{8, 6});
  CHECK(shape_of("model.layers.0.post_attention_layernorm.weight") == S{8});
  CHECK(shape_of("lm_head.weight") == S{11, 8});
  // The generation config, and the other files the folder has.
  const HfModelFolder folder = load_hf_folder(dir.string());
  CHECK(folder.generation.eos_token_ids == std::vector<int>{3, 4});
  CHECK(folder.generation.bos_token_id == 1);
  CHECK(folder.generation.temperature == 0.7f);
  CHECK(folder.generation.top_p == 0.8f);
  CHECK(folder.generation.top_k == 20);
  CHECK(folder.generation.do_sample == true);
  CHECK(folder.tokenizer_json.empty());
  CHECK(folder.tokenizer_config_json.empty());
  CHECK(folder.name == dir.filename().string());

  // Qwen 3, tied: q/k norms, no lm_head, head_dim in config.json.
  const fs::path qwen3 = small_folder(HfArchitecture::Qwen3, true);
  const SafetensorsFile st((qwen3 / "model.safetensors").string());
  CHECK(st.find_tensor("lm_head.weight") == nullptr);
  CHECK(st.find_tensor("model.layers.0.self_attn.q_norm.weight")->shape == S{4});
  CHECK(st.find_tensor("model.layers.0.self_attn.q_proj.bias") == nullptr);
  CHECK(read_json(qwen3 / "config.json")["head_dim"] == 4);
  CHECK(read_json(qwen3 / "config.json")["tie_word_embeddings"] == true);
  CHECK(!fs::exists(qwen3 / "generation_config.json"));
}

TEST_CASE("a gpt-oss folder keeps its experts as transformers' GptOssExperts does: output last, gate and up interleaved",
          "[hf_folder]") {
  // Read here straight from the safetensors file, index by index, as
  // modeling_gpt_oss.py uses them: gate_up = x @ gate_up_proj[e] + bias,
  // gate = gate_up[..., ::2], up = gate_up[..., 1::2]; out = h @ down_proj[e].
  const ModelConfig c = config_for(HfArchitecture::GptOss, 1, 2, 2, 5, 2, 11, 16);  // dim 8, experts 5 wide
  const ModelWeights w = weights_for(c, 9, false);
  const fs::path dir = fresh_dir("gpt-oss");
  write_hf_folder(dir.string(), w, {.dtype = SafetensorsDType::F32, .architecture = HfArchitecture::GptOss});
  const auto config = read_json(dir / "config.json");
  CHECK(config["architectures"] == nlohmann::json::array({"GptOssForCausalLM"}));
  CHECK(config["num_local_experts"] == 3);
  CHECK(config["num_experts_per_tok"] == 2);
  CHECK(config["swiglu_limit"] == 7.0);
  CHECK(config["attention_bias"] == true);
  CHECK(config["sliding_window"] == 3);
  CHECK(config["layer_types"] == nlohmann::json::array({"sliding_attention", "full_attention"}));
  const SafetensorsFile st((dir / "model.safetensors").string());
  const auto values = [&](const std::string& name, const std::vector<uint64_t>& shape) {
    const auto* t = st.find_tensor(name);
    REQUIRE(t);
    CHECK(t->shape == shape);
    std::vector<float> v(size_t(t->n_elements));
    st.read_tensor_floats(*t, v);
    return v;
  };
  const std::string p = "model.layers.1.";
  const auto gate_up = values(p + "mlp.experts.gate_up_proj", {3, 8, 10});
  const auto gate_up_bias = values(p + "mlp.experts.gate_up_proj_bias", {3, 10});
  const auto down = values(p + "mlp.experts.down_proj", {3, 5, 8});
  const auto down_bias = values(p + "mlp.experts.down_proj_bias", {3, 8});
  const auto& L = w.layers[1];
  for (size_t e = 0; e < 3; ++e) {
    for (size_t j = 0; j < 5; ++j) {
      CHECK(gate_up_bias[e * 10 + 2 * j] == L.exp_gate_bias(e, j));
      CHECK(gate_up_bias[e * 10 + 2 * j + 1] == L.exp_up_bias(e, j));
      for (size_t i = 0; i < 8; ++i) {
        CHECK(gate_up[(e * 8 + i) * 10 + 2 * j] == L.exp_gate(e, j, i));
        CHECK(gate_up[(e * 8 + i) * 10 + 2 * j + 1] == L.exp_up(e, j, i));
        CHECK(down[(e * 5 + j) * 8 + i] == L.exp_down(e, i, j));
      }
    }
    for (size_t i = 0; i < 8; ++i) CHECK(down_bias[e * 8 + i] == L.exp_down_bias(e, i));
  }
  CHECK(values(p + "mlp.router.weight", {3, 8}) == std::vector<float>(L.router.begin(), L.router.end()));
  CHECK(values(p + "mlp.router.bias", {3}) == std::vector<float>(L.router_bias.begin(), L.router_bias.end()));
  CHECK(values(p + "self_attn.sinks", {2}) == std::vector<float>(L.sinks.begin(), L.sinks.end()));
  CHECK(values(p + "self_attn.o_proj.bias", {8}) == std::vector<float>(L.bo.begin(), L.bo.end()));
  CHECK(values(p + "post_attention_layernorm.weight", {8}) == std::vector<float>(L.ffn_norm.begin(), L.ffn_norm.end()));
  // No per-expert tensors, and nothing else per layer: 2 norms, q/k/v/o and
  // their biases, sinks, router and its bias, the experts and their biases.
  CHECK(!st.find_tensor(p + "mlp.experts.0.gate_proj.weight"));
  size_t per_layer = 0;
  for (const auto& t : st.tensors()) per_layer += t.name.rfind(p, 0) == 0;
  CHECK(per_layer == 2 + 8 + 1 + 2 + 4);
  // Read back: the same weights, bit for bit (F32).
  CHECK(compare_all(load_hf_folder(dir.string()).weights, w, SafetensorsDType::F32).empty());
}

TEST_CASE("a gpt-oss folder with the published MXFP4 experts reads each weight as E2M1 times 2^(scale - 127)",
          "[hf_folder]") {
  // As openai/gpt-oss-20b ships: quantization_config mxfp4, and each expert
  // stack as _blocks [E, out, in / 32, 16] and _scales [E, out, in / 32]
  // bytes, output axis first, gate and up interleaved along it, two weights
  // a byte (the low nibble first). The bytes are random; each weight is
  // worked out here from the OCP format's definition.
  const ModelConfig c = config_for(HfArchitecture::GptOss, 1, 2, 8, 32, 1, 11, 16);  // dim 32, experts 32 wide
  const fs::path dir = fresh_dir("gpt-oss-mxfp4");
  write_hf_folder(dir.string(), weights_for(c, 3, false), {.dtype = SafetensorsDType::F32,
                                                          .architecture = HfArchitecture::GptOss});
  auto config = read_json(dir / "config.json");
  config["quantization_config"] = {{"quant_method", "mxfp4"},
                                   {"modules_to_not_convert", {"model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                               "model.embed_tokens", "lm_head"}}};
  astrai::test::write_file(dir / "config.json", config.dump());
  std::mt19937 rng(7);
  const auto random_bytes = [&](size_t n, int lo, int hi) {
    std::string out(n, '\0');
    for (auto& b : out) b = char(lo + int(rng() % unsigned(hi - lo + 1)));
    return out;
  };
  const std::string p = "model.layers.0.mlp.experts.";
  // [E, out, in]: gate_up 3 x 64 x 32, down 3 x 32 x 32.
  const std::string gate_up_blocks = random_bytes(3 * 64 * 16, 0, 255), gate_up_scales = random_bytes(3 * 64, 118, 130);
  const std::string down_blocks = random_bytes(3 * 32 * 16, 0, 255), down_scales = random_bytes(3 * 32, 0, 255);
  {
    const SafetensorsFile st((dir / "model.safetensors").string());
    nlohmann::json header = nlohmann::json::object();
    std::string data;
    const auto add = [&](const std::string& name, const char* dtype, const std::vector<uint64_t>& shape,
                         const std::string& bytes) {
      header[name] = {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {data.size(), data.size() + bytes.size()}}};
      data += bytes;
    };
    for (const auto& t : st.tensors()) {
      if (t.name == p + "gate_up_proj" || t.name == p + "down_proj") continue;
      const auto raw = st.tensor_data(t);
      add(t.name, "F32", t.shape, std::string(reinterpret_cast<const char*>(raw.data()), raw.size()));
    }
    add(p + "gate_up_proj_blocks", "U8", {3, 64, 1, 16}, gate_up_blocks);
    add(p + "gate_up_proj_scales", "U8", {3, 64, 1}, gate_up_scales);
    add(p + "down_proj_blocks", "U8", {3, 32, 1, 16}, down_blocks);
    add(p + "down_proj_scales", "U8", {3, 32, 1}, down_scales);
    astrai::test::write_file(dir / "model.safetensors", astrai::test::safetensors_bytes(header.dump(), data));
  }
  // E2M1: sign bit 3, exponent bits 2..1 (bias 1, 0 subnormal), mantissa bit 0.
  const auto weight = [](const std::string& blocks, const std::string& scales, size_t row, size_t col) {
    const auto byte = uint8_t(blocks[row * 16 + col / 2]);
    const unsigned q = col % 2 ? byte >> 4 : byte & 15u;
    const int exponent = int(q >> 1 & 3), mantissa = int(q & 1);
    const double magnitude = exponent == 0 ? 0.5 * mantissa : std::ldexp(1.0 + 0.5 * mantissa, exponent - 1);
    return (q & 8 ? -magnitude : magnitude) * std::ldexp(1.0, int(uint8_t(scales[row])) - 127);
  };
  const HfModelFolder folder = load_hf_folder(dir.string());
  const auto& L = folder.weights.layers[0];
  size_t mismatches = 0;
  for (size_t e = 0; e < 3; ++e)
    for (size_t i = 0; i < 32; ++i)
      for (size_t o = 0; o < 32; ++o) {
        mismatches += double(L.exp_gate(e, o, i)) != weight(gate_up_blocks, gate_up_scales, e * 64 + 2 * o, i);
        mismatches += double(L.exp_up(e, o, i)) != weight(gate_up_blocks, gate_up_scales, e * 64 + 2 * o + 1, i);
        mismatches += double(L.exp_down(e, o, i)) != weight(down_blocks, down_scales, e * 32 + o, i);
      }
  CHECK(mismatches == 0);
  // Without quantization_config the blocks are tensors the model does not
  // have; with another method, refused by name.
  config.erase("quantization_config");
  astrai::test::write_file(dir / "config.json", config.dump());
  CHECK_THAT(load_error(dir), Contains("unexpected tensor") && Contains("_blocks"));
  config["quantization_config"] = {{"quant_method", "fp8"}};
  astrai::test::write_file(dir / "config.json", config.dump());
  CHECK_THAT(load_error(dir), Contains("quant_method fp8"));
}

TEST_CASE("a Gemma 3 image-and-text folder loads its text model as the text-only folder holds it, in both layouts",
          "[hf_folder]") {
  // A random Gemma3ForCausalLM folder, then the same text model as a
  // Gemma3ForConditionalGeneration folder: config.json nesting the text
  // fields under text_config (the default-valued ones left out) beside a
  // vision_config, the tensors renamed as transformers saves them (before
  // 4.52 under "language_model.", since then under "model.language_model."),
  // and a vision tower and projector the text model does not read.
  rc::prop("the same config and the same weights, bit for bit", [] {
    ModelConfig c = config_for(HfArchitecture::Gemma3, *rc::gen::inRange(1, 3), *rc::gen::inRange(1, 3),
                               *rc::gen::inRange(1, 4), *rc::gen::inRange(1, 20), *rc::gen::inRange(1, 8),
                               *rc::gen::inRange(3, 40), *rc::gen::inRange(8, 65));  // Gemma's default BOS, 2, in the vocabulary
    const bool tied = *rc::gen::arbitrary<bool>();
    const bool old_layout = *rc::gen::arbitrary<bool>();
    const ModelWeights original = weights_for(c, *rc::gen::arbitrary<uint64_t>(), tied);
    HfWriteOptions options;
    options.architecture = HfArchitecture::Gemma3;
    options.dtype = SafetensorsDType::F32;
    const fs::path text_only = fresh_dir("gemma3_text"), both = fresh_dir("gemma3_image_text");
    write_hf_folder(text_only.string(), original, options);
    write_hf_folder(both.string(), original, options);

    nlohmann::json text = read_json(both / "config.json");
    nlohmann::json outer = {{"architectures", {"Gemma3ForConditionalGeneration"}}, {"model_type", "gemma3"},
                            {"image_token_index", 262144}, {"mm_tokens_per_image", 256},
                            {"vision_config", {{"model_type", "siglip_vision_model"}, {"hidden_size", 16}}}};
    for (const char* key : {"eos_token_id", "bos_token_id", "torch_dtype"})
      if (text.contains(key)) {
        outer[key] = text[key];
        text.erase(key);
      }
    text.erase("architectures");
    // Gemma3TextConfig's defaults fill these in (every folder written here has them so).
    for (const char* key : {"hidden_activation", "attention_bias", "attn_logit_softcapping"}) text.erase(key);
    text["model_type"] = "gemma3_text";
    outer["text_config"] = text;
    {
      std::ofstream out(both / "config.json", std::ios::binary | std::ios::trunc);
      out << outer.dump(2);
    }
    rewrite(both / "model.safetensors", [&](std::vector<TensorCopy>& tensors) {
      for (TensorCopy& t : tensors) {
        if (old_layout) t.name = "language_model." + t.name;
        else if (t.name.starts_with("model.")) t.name = "model.language_model." + t.name.substr(6);
      }
      const std::string side = old_layout ? "" : "model.";
      tensors.push_back({side + "vision_tower.vision_model.post_layernorm.weight", {16}, std::vector<float>(16, 1.0f)});
      tensors.push_back({side + "multi_modal_projector.mm_input_projection_weight", {16, 4}, std::vector<float>(64, 0.5f)});
    });

    const HfModelFolder want = load_hf_folder(text_only.string());
    const HfModelFolder got = load_hf_folder(both.string());
    RC_ASSERT(got.architecture == HfArchitecture::Gemma3);
    RC_ASSERT(same_config(got.weights.config, want.weights.config));
    // The ids the written config gives, else Gemma3TextConfig's (EOS 1).
    RC_ASSERT(got.generation.eos_token_ids ==
              (want.generation.eos_token_ids.empty() ? std::vector<int>{1} : want.generation.eos_token_ids));
    const std::string diff = compare_all(got.weights, want.weights, SafetensorsDType::F32);
    RC_LOG() << diff;
    RC_ASSERT(diff.empty());
    // A tensor of the text model under the other layout's name is refused by name.
    rewrite(both / "model.safetensors", [&](std::vector<TensorCopy>& tensors) {
      for (TensorCopy& t : tensors)
        if (t.name.ends_with("model.norm.weight")) t.name = "model.norm.weight";
    });
    RC_ASSERT(load_error(both).find("model.norm.weight") != std::string::npos);
    fs::remove_all(text_only);
    fs::remove_all(both);
  });
}

TEST_CASE("folder loading: tokenizer paths, name, and config.json's ids as generation defaults", "[hf_folder]") {
  const fs::path dir = small_folder(HfArchitecture::Llama, true);
  astrai::test::write_file(dir / "tokenizer.json", "{}");
  astrai::test::write_file(dir / "tokenizer_config.json", "{}");
  auto config = read_json(dir / "config.json");
  config["eos_token_id"] = nlohmann::json::array({2, 3});
  config["bos_token_id"] = 1;
  astrai::test::write_file(dir / "config.json", config.dump());
  const HfModelFolder folder = load_hf_folder(dir.string() + "/");
  CHECK(folder.tokenizer_json == (dir / "tokenizer.json").string());
  CHECK(folder.tokenizer_config_json == (dir / "tokenizer_config.json").string());
  CHECK(folder.name == dir.filename().string());
  CHECK(folder.generation.eos_token_ids == std::vector<int>{2, 3});
  CHECK(folder.generation.bos_token_id == 1);
  CHECK(is_hf_folder(dir.string()));
  CHECK(!is_hf_folder((dir / "config.json").string()));
  // generation_config.json's ids win over config.json's.
  astrai::test::write_file(dir / "generation_config.json", R"({"eos_token_id": 5})");
  CHECK(load_hf_folder(dir.string()).generation.eos_token_ids == std::vector<int>{5});
  CHECK(load_hf_folder(dir.string()).generation.bos_token_id == 1);
}

TEST_CASE("folder loading ignores what vLLM ignores and refuses the rest, naming the tensor", "[hf_folder]") {
  const fs::path dir = small_folder(HfArchitecture::Llama, false, with_dtype(SafetensorsDType::F32));
  const fs::path file = dir / "model.safetensors";
  const std::string original = astrai::test::read_file(file);
  auto restore = [&] { astrai::test::write_file(file, original); };
  const ModelWeights reference = load_hf_folder(dir.string()).weights;

  // RoPE tables some exporters leave in: ignored.
  rewrite(file, [](auto& t) {
    t.push_back({"model.layers.0.self_attn.rotary_emb.inv_freq", {2}, {1.0f, 0.5f}});
    t.push_back({"model.layers.1.self_attn.rotary_emb.cos_cached", {1}, {1.0f}});
  });
  CHECK(compare_all(load_hf_folder(dir.string()).weights, reference, SafetensorsDType::F32).empty());
  restore();
  // Anything else unknown is refused.
  rewrite(file, [](auto& t) { t.push_back({"model.layers.0.self_attn.o_proj.bias", {8}, std::vector<float>(8)}); });
  CHECK_THAT(load_error(dir), Contains("unexpected tensor 'model.layers.0.self_attn.o_proj.bias'"));
  restore();
  rewrite(file, [](auto& t) { t.push_back({"model.layers.2.input_layernorm.weight", {8}, std::vector<float>(8)}); });
  CHECK_THAT(load_error(dir), Contains("unexpected tensor 'model.layers.2.input_layernorm.weight'"));
  restore();
  // Missing and misshapen tensors.
  rewrite(file, [](auto& t) { std::erase_if(t, [](const auto& x) { return x.name == "model.layers.1.mlp.up_proj.weight"; }); });
  CHECK_THAT(load_error(dir), Contains("tensor 'model.layers.1.mlp.up_proj.weight' is missing"));
  restore();
  rewrite(file, [](auto& t) {
    for (auto& x : t)
      if (x.name == "model.layers.0.self_attn.k_proj.weight") x.shape = {8, 4};
  });
  CHECK_THAT(load_error(dir), Contains("tensor 'model.layers.0.self_attn.k_proj.weight' has shape [8, 4], config.json implies [4, 8]"));
  restore();
  // Untied without lm_head: missing. Tied with one: ignored (the embedding is the classifier).
  rewrite(file, [](auto& t) { std::erase_if(t, [](const auto& x) { return x.name == "lm_head.weight"; }); });
  CHECK_THAT(load_error(dir), Contains("tensor 'lm_head.weight' is missing"));
  restore();
  auto config = read_json(dir / "config.json");
  config["tie_word_embeddings"] = true;
  astrai::test::write_file(dir / "config.json", config.dump());
  ModelWeights expected = reference;
  expected.classifier = expected.token_embedding;
  CHECK(compare_all(load_hf_folder(dir.string()).weights, expected, SafetensorsDType::F32).empty());
}

TEST_CASE("an MoE folder missing an expert, with an extra one, or a stack of the wrong shape is refused by name",
          "[hf_folder]") {
  // Qwen 3 MoE: 3 experts of width 7 in layer 1 (layer 0 is dense).
  const fs::path dir = small_folder(HfArchitecture::Qwen3Moe, false, with_dtype(SafetensorsDType::F32));
  const fs::path file = dir / "model.safetensors";
  const std::string original = astrai::test::read_file(file);
  auto restore = [&] { astrai::test::write_file(file, original); };
  const std::string expert = "model.layers.1.mlp.experts.2.up_proj.weight";
  rewrite(file, [&](auto& t) { std::erase_if(t, [&](const auto& x) { return x.name == expert; }); });
  CHECK_THAT(load_error(dir), Contains("tensor '" + expert + "' is missing"));
  restore();
  rewrite(file, [](auto& t) { t.push_back({"model.layers.1.mlp.experts.3.up_proj.weight", {7, 8}, std::vector<float>(56)}); });
  CHECK_THAT(load_error(dir), Contains("unexpected tensor 'model.layers.1.mlp.experts.3.up_proj.weight'"));
  restore();
  rewrite(file, [&](auto& t) {
    for (auto& x : t)
      if (x.name == expert) x.shape = {8, 7};
  });
  CHECK_THAT(load_error(dir), Contains("tensor '" + expert + "' has shape [8, 7], config.json implies [7, 8]"));
  restore();
  // A dense layer 0 has no experts: its SwiGLU is required, a router refused.
  rewrite(file, [](auto& t) { t.push_back({"model.layers.0.mlp.gate.weight", {3, 8}, std::vector<float>(24)}); });
  CHECK_THAT(load_error(dir), Contains("unexpected tensor 'model.layers.0.mlp.gate.weight'"));
  restore();
  CHECK(load_error(dir).empty());
}

TEST_CASE("folder loading: missing files and a bad index are refused naming the file", "[hf_folder]") {
  const fs::path empty = fresh_dir("empty");
  fs::create_directories(empty);
  CHECK_THAT(load_error(empty), Contains("no config.json (not a Hugging Face model folder)"));
  CHECK_THAT(load_error(empty / "nothing"), Contains("not a directory"));
  const fs::path dir = small_folder(HfArchitecture::Mistral, true);
  fs::remove(dir / "model.safetensors");
  CHECK_THAT(load_error(dir), Contains("neither model.safetensors nor model.safetensors.index.json"));

  const fs::path sharded = small_folder(HfArchitecture::Llama, true, sharded_at(200));
  const fs::path index_path = sharded / "model.safetensors.index.json";
  const auto index = read_json(index_path);
  auto with_index = [&](const std::function<void(nlohmann::json&)>& edit) {
    auto j = index;
    edit(j);
    astrai::test::write_file(index_path, j.dump());
    return load_error(sharded);
  };
  CHECK(with_index([](auto&) {}).empty());
  CHECK_THAT(with_index([](auto& j) { j.erase("weight_map"); }), Contains("no \"weight_map\" object"));
  CHECK_THAT(with_index([](auto& j) { j["weight_map"]["model.norm.weight"] = "../model.safetensors"; }),
             Contains("not a plain file name in the folder"));
  CHECK_THAT(with_index([](auto& j) { j["weight_map"]["model.norm.weight"] = 5; }),
             Contains("weight_map entry of tensor 'model.norm.weight' is not a file name"));
  CHECK_THAT(with_index([](auto& j) { j["weight_map"]["model.norm.weight"] = "model-00009-of-00009.safetensors"; }),
             Contains("model-00009-of-00009.safetensors: missing (the index lists it as a shard)"));
  // The index puts a tensor in a shard that does not hold it; a shard holds a tensor the index does not list.
  CHECK_THAT(with_index([&](auto& j) {
               j["weight_map"]["model.norm.weight"] = j["weight_map"]["model.embed_tokens.weight"];
             }),
             Contains("puts tensor 'model.norm.weight' here, but the file does not hold it"));
  CHECK_THAT(with_index([&](auto& j) {
               j["weight_map"]["model.embed_tokens.weight"] = j["weight_map"]["model.norm.weight"];
             }),
             Contains("holds tensor 'model.embed_tokens.weight', which model.safetensors.index.json does not put in this shard"));
  CHECK_THAT(with_index([](auto& j) { j["weight_map"]["model.extra.weight"] = j["weight_map"]["model.norm.weight"]; }),
             Contains("puts tensor 'model.extra.weight' here, but the file does not hold it"));
  astrai::test::write_file(index_path, "{");
  CHECK_THAT(load_error(sharded), Contains("model.safetensors.index.json: not valid JSON"));
}

TEST_CASE("writing into a folder replaces earlier weights and keeps other files", "[hf_folder]") {
  const ModelConfig c = config_for(HfArchitecture::Llama, 1, 2, 2, 6, 2, 11, 16);
  const ModelWeights first = weights_for(c, 1, false), second = weights_for(c, 2, true);
  const fs::path dir = fresh_dir("rewrite");
  write_hf_folder(dir.string(), first, sharded_at(100));
  astrai::test::write_file(dir / "tokenizer.json", "{}");
  astrai::test::write_file(dir / "generation_config.json", R"({"eos_token_id": 3})");
  auto safetensors_files = [&] {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir)) n += e.path().extension() == ".safetensors";
    return n;
  };
  REQUIRE(safetensors_files() > 2);
  write_hf_folder(dir.string(), second, with_dtype(SafetensorsDType::F32));
  CHECK(safetensors_files() == 1);  // model.safetensors alone: no stale shard
  CHECK(!fs::exists(dir / "model.safetensors.index.json"));
  CHECK(fs::exists(dir / "tokenizer.json"));
  const HfModelFolder folder = load_hf_folder(dir.string());
  CHECK(compare_all(folder.weights, second, SafetensorsDType::F32).empty());
  CHECK(folder.generation.eos_token_ids == std::vector<int>{3});
}

TEST_CASE("the folder writer refuses weights Hugging Face cannot hold as they are", "[hf_folder]") {
  ModelConfig c = config_for(HfArchitecture::Llama, 1, 1, 2, 4, 1, 5, 4);
  ModelWeights w = weights_for(c, 1, false);
  w.config.rope_layout = RopeLayout::AdjacentPairs;
  CHECK_THROWS_WITH(write_hf_folder(fresh_dir("refused").string(), w), Contains("rotate-half"));
  w.config.rope_layout = RopeLayout::RotateHalf;
  HfWriteOptions as_qwen2;
  as_qwen2.architecture = HfArchitecture::Qwen2;
  CHECK_THROWS_WITH(write_hf_folder(fresh_dir("refused").string(), w, as_qwen2),
                    Contains("is not a Qwen2ForCausalLM"));
  CHECK_THROWS_AS(write_hf_folder(fresh_dir("refused").string(), w, with_dtype(SafetensorsDType::I8)),
                  std::invalid_argument);
  w.layers[0].wq = xt::xtensor<float, 2>::from_shape({3, 4});
  CHECK_THROWS_WITH(write_hf_folder(fresh_dir("refused").string(), w), Contains("layer 0 wq"));
}

TEST_CASE("a folder whose safetensors bytes are damaged fails cleanly or loads a consistent model", "[hf_folder][corruption]") {
  const fs::path dir = small_folder(HfArchitecture::Qwen3, false, with_dtype(SafetensorsDType::F16));
  const fs::path file = dir / "model.safetensors";
  const std::string original = astrai::test::read_file(file);
  const uint64_t header_end = SafetensorsFile(file.string()).data_offset();  // length + JSON
  // model.safetensors becomes a link to an in-memory file, rewritten for each
  // variant without touching the disk.
  astrai::test::MemoryFile mem;
  fs::remove(file);
  fs::create_symlink(mem.path(), file);
  auto loads = [&](const std::string& bytes) {
    mem.set(bytes);
    try {
      const HfModelFolder f = load_hf_folder(dir.string());
      f.weights.validate_shapes();
      return true;
    } catch (const std::runtime_error& e) {
      // Every message names the damaged file (or the folder, for a tensor the header lost).
      const std::string message = e.what();
      if (message.find(dir.string()) == std::string::npos) FAIL("message without the folder: " << message);
      return false;
    }
  };
  REQUIRE(loads(original));
  // Every truncation fails (the tensors must tile the file to its end).
  for (size_t n = 0; n < original.size(); ++n) {
    INFO("truncated to " << n);
    CHECK(!loads(original.substr(0, n)));
  }
  rc::prop("bytes of the header and length changed", [&] {
    std::string bytes = original;
    const int changes = *rc::gen::inRange(1, 4);
    for (int i = 0; i < changes; ++i) {
      const auto at = *rc::gen::inRange<size_t>(0, size_t(header_end));
      bytes[at] = char(*rc::gen::arbitrary<uint8_t>());
    }
    (void)loads(bytes);
  });
}
