// GGUF models: random small models and synthetic tokenizers survive
// write -> read exactly (F32) or as the independently rounded values (F16,
// BF16); the file follows llama.cpp's names; stories260K converted to GGUF
// loads identical to the original; malformed models fail naming the problem.
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <functional>

#include "engine/model_files/gguf/gguf_model.h"
#include "engine/model_files/gguf/gguf_reader.h"
#include "engine/model_files/gguf/gguf_writer.h"
#include "engine/model_files/hf/hf_config.h"
#include "engine/model_files/llama2c/llama2c_checkpoint.h"
#include "engine/model_files/load_model.h"
#include "engine/model_files/model_source.h"
#include "reference/synthetic_model.h"
#include "engine/tokenizer/synthetic_tokenizer.h"
#include "tests/engine/model_files/gguf_test_files.h"
#include "tests/engine/model_files/model_compare.h"

using namespace astrai;
using astrai::test::compare_weights;
using astrai::test::same_tokenizer;
using Catch::Matchers::Contains;

namespace {

ModelConfig small_config(int kv_heads, int group, int half_head, int hidden, int layers, int vocab, int ctx) {
  ModelConfig c;
  c.n_kv_heads = kv_heads;
  c.n_heads = kv_heads * group;
  c.dim = c.n_heads * half_head * 2;
  c.hidden_dim = hidden;
  c.n_layers = layers;
  c.vocab_size = vocab;
  c.max_seq_len = ctx;
  return c;
}

rc::Gen<ModelConfig> gen_config() {
  return rc::gen::apply(
      [](int kv, int group, int half_head, int hidden, int layers, int vocab, int ctx, float theta, float eps) {
        ModelConfig c = small_config(kv, group, half_head, hidden, layers, vocab, ctx);
        c.rope_theta = theta;
        c.norm_eps = eps;
        return c;
      },
      rc::gen::inRange(1, 4), rc::gen::inRange(1, 4), rc::gen::inRange(1, 5), rc::gen::inRange(1, 25),
      rc::gen::inRange(1, 4), rc::gen::inRange(259, 300), rc::gen::inRange(1, 65),
      rc::gen::element(10000.0f, 500000.0f, 1234.5f), rc::gen::element(1e-5f, 1e-6f, 3.3e-7f));
}

// Synthetic weights with values that stress 16-bit rounding: beyond the half
// range, subnormal in half, negative zero, a tie.
ModelWeights stressed_weights(const ModelConfig& c, uint64_t seed, bool tied) {
  ModelWeights w = make_synthetic_weights(c, seed);
  w.layers[0].wq(0, 0) = 70000.0f;
  w.layers[0].wq(0, 1) = 1e-8f;
  w.layers[0].wk(0, 0) = -0.0f;
  w.layers[0].w_up(0, 0) = 1.0f + 1.0f / 2048.0f;
  w.token_embedding(0, 0) = -3e38f;
  if (tied) w.classifier = w.token_embedding;
  return w;
}

// Copies a GGUF file through GgufReader/GgufWriter, letting `edit` change the
// metadata and tensors on the way: malformed models made from valid ones.
struct TensorCopy {
  std::string name;
  std::vector<uint64_t> ne;
  GgmlType type;
  std::vector<float> data;
};
using Metadata = std::vector<std::pair<std::string, GgufValue>>;

std::string rewrite_gguf(const std::string& src, const std::function<void(Metadata&, std::vector<TensorCopy>&)>& edit) {
  const GgufReader g(src);
  Metadata metadata = g.metadata();
  std::vector<TensorCopy> tensors;
  for (const auto& t : g.tensors()) {
    TensorCopy copy{t.name, t.ne, t.type, std::vector<float>(t.n_elements)};
    g.read_tensor_floats(t, copy.data);
    tensors.push_back(std::move(copy));
  }
  edit(metadata, tensors);
  GgufWriter w;
  for (auto& [key, value] : metadata) w.add_metadata(key, value);
  for (auto& t : tensors) w.add_tensor(t.name, t.ne, t.data, t.type);
  const auto out = astrai::test::scratch_file("rewritten").string();
  w.write(out);
  return out;
}

GgufValue* find_key(Metadata& m, const std::string& key) {
  for (auto& [k, v] : m)
    if (k == key) return &v;
  return nullptr;
}

void set_key(Metadata& m, const std::string& key, GgufValue value) {
  if (auto* v = find_key(m, key)) *v = std::move(value);
  else m.emplace_back(key, std::move(value));
}

void erase_key(Metadata& m, const std::string& key) {
  std::erase_if(m, [&](const auto& kv) { return kv.first == key; });
}

// A small valid model file to corrupt.
std::string small_model_file(const ModelConfig& c, bool tied = true) {
  const auto path = astrai::test::scratch_file("small-model").string();
  write_gguf_model(path, stressed_weights(c, 7, tied), make_synthetic_tokenizer(c.vocab_size), GgufDType::F32, "tiny");
  return path;
}

}  // namespace

TEST_CASE("GGUF model round trip: weights, config and tokenizer", "[gguf_model]") {
  rc::prop("write then read", [] {
    const ModelConfig config = *gen_config();
    const auto seed = *rc::gen::arbitrary<uint64_t>();
    const bool tied = *rc::gen::arbitrary<bool>();
    const auto dtype = *rc::gen::element(GgufDType::F32, GgufDType::F16, GgufDType::BF16);
    const ModelWeights original = stressed_weights(config, seed, tied);
    const Tokenizer tokenizer = make_synthetic_tokenizer(config.vocab_size);
    const auto path = astrai::test::scratch_file("model").string();
    write_gguf_model(path, original, tokenizer, dtype, "rt-model");

    const GgufModel back = read_gguf_model(path);
    RC_ASSERT(compare_weights(back.weights, original, dtype) == "");
    RC_ASSERT(same_tokenizer(back.tokenizer, tokenizer));
    RC_ASSERT(back.name == "rt-model");
    RC_ASSERT(back.chat_template.empty());
    // Tied embeddings are stored once, as llama.cpp does.
    RC_ASSERT((GgufReader(path).find_tensor("output.weight") == nullptr) == tied);
    std::filesystem::remove(path);
  });
}

TEST_CASE("GGUF model files use llama.cpp's keys, names and types", "[gguf_model]") {
  const ModelConfig c = small_config(2, 2, 2, 10, 2, 400, 16);
  const auto path = astrai::test::scratch_file("names").string();
  write_gguf_model(path, stressed_weights(c, 1, false), make_synthetic_tokenizer(400), GgufDType::F16, "names");
  const GgufReader g(path);
  CHECK(g.get_string("general.architecture") == "llama");
  CHECK(g.get_string("general.name") == "names");
  CHECK(g.get("general.file_type") == GgufValue(uint32_t(1)));
  CHECK(g.get("llama.context_length") == GgufValue(uint32_t(16)));
  CHECK(g.get("llama.embedding_length") == GgufValue(uint32_t(16)));
  CHECK(g.get("llama.block_count") == GgufValue(uint32_t(2)));
  CHECK(g.get("llama.feed_forward_length") == GgufValue(uint32_t(10)));
  CHECK(g.get("llama.attention.head_count") == GgufValue(uint32_t(4)));
  CHECK(g.get("llama.attention.head_count_kv") == GgufValue(uint32_t(2)));
  CHECK(g.get("llama.rope.dimension_count") == GgufValue(uint32_t(4)));
  CHECK(g.get("llama.rope.freq_base") == GgufValue(10000.0f));
  CHECK(g.get("llama.attention.layer_norm_rms_epsilon") == GgufValue(1e-5f));
  CHECK(g.get("llama.vocab_size") == GgufValue(uint32_t(400)));
  CHECK(g.get_string("tokenizer.ggml.model") == "llama");
  const auto tokens = g.get_string_array("tokenizer.ggml.tokens");
  REQUIRE(tokens.size() == 400);
  CHECK(tokens[0] == "<unk>");
  CHECK(tokens[3 + 0x20] == "<0x20>");            // byte pieces unchanged
  CHECK(tokens[259] == "\xE2\x96\x81");           // the piece " " is stored as U+2581
  CHECK(tokens[259 + 95] == "\xE2\x96\x81" "a");  // " a"
  CHECK(g.get_array("tokenizer.ggml.scores").element_type == GgufValueType::Float32);
  CHECK(g.get_array("tokenizer.ggml.token_type").element_type == GgufValueType::Int32);
  const auto types = g.get_int_array("tokenizer.ggml.token_type");
  CHECK(types[0] == 2);
  CHECK(types[1] == 3);
  CHECK(types[3] == 6);
  CHECK(types[259] == 1);
  CHECK(g.get("tokenizer.ggml.bos_token_id") == GgufValue(uint32_t(1)));
  CHECK(g.get("tokenizer.ggml.eos_token_id") == GgufValue(uint32_t(2)));
  CHECK(g.get("tokenizer.ggml.unknown_token_id") == GgufValue(uint32_t(0)));

  const std::vector<std::string> names = {"token_embd.weight", "blk.0.attn_norm.weight", "blk.0.attn_q.weight",
                                          "blk.0.attn_k.weight", "blk.0.attn_v.weight", "blk.0.attn_output.weight",
                                          "blk.0.ffn_norm.weight", "blk.0.ffn_gate.weight", "blk.0.ffn_down.weight",
                                          "blk.0.ffn_up.weight", "blk.1.attn_norm.weight"};
  for (const auto& n : names) CHECK(g.find_tensor(n) != nullptr);
  CHECK(g.tensors().size() == 1 + 2 * 9 + 2);  // + output_norm and (untied) output
  CHECK(g.tensor("token_embd.weight").ne == std::vector<uint64_t>{16, 400});
  CHECK(g.tensor("blk.1.attn_k.weight").ne == std::vector<uint64_t>{16, 8});
  CHECK(g.tensor("blk.0.ffn_down.weight").ne == std::vector<uint64_t>{10, 16});
  CHECK(g.tensor("blk.0.ffn_down.weight").type == GgmlType::F16);
  CHECK(g.tensor("output.weight").type == GgmlType::F16);
  CHECK(g.tensor("blk.0.attn_norm.weight").type == GgmlType::F32);  // norms stay F32
  CHECK(g.tensor("output_norm.weight").type == GgmlType::F32);
}

TEST_CASE("stories260K converted to GGUF loads identical to the original", "[gguf_model]") {
  ASTRAI_REQUIRE_SHARED(model, "models/stories260K/stories260K.bin");
  ASTRAI_REQUIRE_SHARED(tok, "models/stories260K/tok512.bin");
  const ModelWeights original = load_llama2c_checkpoint(model.string());
  const Tokenizer original_tok = Tokenizer::load_llama2c(tok.string(), 512);
  for (const auto dtype : {GgufDType::F32, GgufDType::F16, GgufDType::BF16}) {
    INFO("dtype " << gguf_dtype_name(dtype));
    const auto out = astrai::test::scratch_file("stories260K-" + gguf_dtype_name(dtype)).string();
    convert_to_gguf(model.string(), tok.string(), out, dtype);
    const GgufModel g = read_gguf_model(out);
    CHECK(compare_weights(g.weights, original, dtype) == "");
    CHECK(same_tokenizer(g.tokenizer, original_tok));
    CHECK(g.name == "stories260K");
    CHECK(GgufReader(out).find_tensor("output.weight") == nullptr);  // shared classifier
    const std::string text = "Once upon a time, there was a little girl named Lily.";
    CHECK(g.tokenizer.encode(text) == original_tok.encode(text));
    std::filesystem::remove(out);
  }
}

TEST_CASE("GGUF model reader: optional keys and chat template", "[gguf_model]") {
  const ModelConfig c = small_config(2, 1, 2, 6, 1, 260, 8);  // n_kv_heads == n_heads
  const auto src = small_model_file(c);
  const auto rewritten = rewrite_gguf(src, [](Metadata& m, std::vector<TensorCopy>&) {
    set_key(m, "tokenizer.chat_template", "{{ messages }}");
    erase_key(m, "llama.attention.head_count_kv");  // defaults to head_count
    erase_key(m, "llama.rope.freq_base");           // defaults to 10000
    erase_key(m, "llama.vocab_size");               // from the token list
    erase_key(m, "llama.rope.dimension_count");
    erase_key(m, "tokenizer.ggml.bos_token_id");  // defaults 1, 2, 0
    set_key(m, "llama.block_count", int32_t(1));  // any integer type will do
  });
  const GgufModel g = read_gguf_model(rewritten);
  CHECK(g.chat_template == "{{ messages }}");
  CHECK(g.weights.config.n_kv_heads == 2);
  CHECK(g.weights.config.vocab_size == 260);
  CHECK(g.tokenizer.bos_id() == 1);
  CHECK(compare_weights(g.weights, read_gguf_model(src).weights, GgufDType::F32) == "");
}

TEST_CASE("GGUF model reader names what is wrong with a malformed model", "[gguf_model]") {
  const ModelConfig c = small_config(1, 2, 2, 6, 1, 260, 8);
  const auto src = small_model_file(c, false);
  auto expect_error = [&](const std::function<void(Metadata&, std::vector<TensorCopy>&)>& edit,
                          const std::string& message) {
    const auto path = rewrite_gguf(src, edit);
    REQUIRE_THROWS_WITH(read_gguf_model(path), Contains(path) && Contains(message));
  };
  auto meta = [](std::function<void(Metadata&)> f) {
    return [f](Metadata& m, std::vector<TensorCopy>&) { f(m); };
  };
  auto tensors = [](std::function<void(std::vector<TensorCopy>&)> f) {
    return [f](Metadata&, std::vector<TensorCopy>& t) { f(t); };
  };
  expect_error(meta([](Metadata& m) { set_key(m, "general.architecture", "gpt2"); }),
               "architecture 'gpt2' is not supported (llama, qwen2, qwen3, qwen2moe, qwen3moe, gemma3, gpt-oss are)");
  expect_error(meta([](Metadata& m) { erase_key(m, "general.architecture"); }),
               "metadata key 'general.architecture' is missing");
  expect_error(meta([](Metadata& m) { set_key(m, "llama.embedding_length", "wide"); }),
               "'llama.embedding_length' has type string, expected an integer");
  expect_error(meta([](Metadata& m) { set_key(m, "llama.block_count", uint32_t(0)); }),
               "'llama.block_count' is 0, expected a positive 32-bit count");
  expect_error(meta([](Metadata& m) { set_key(m, "llama.block_count", uint64_t(1) << 40); }),
               "'llama.block_count' is 1099511627776, expected a positive 32-bit count");
  expect_error(meta([](Metadata& m) { set_key(m, "llama.attention.head_count", uint32_t(3)); }),
               "dim is not a multiple of n_heads");
  expect_error(meta([](Metadata& m) { erase_key(m, "llama.attention.layer_norm_rms_epsilon"); }),
               "'llama.attention.layer_norm_rms_epsilon' is missing");
  expect_error(meta([](Metadata& m) { set_key(m, "llama.rope.dimension_count", uint32_t(2)); }),
               "partial RoPE is not supported");
  expect_error(meta([](Metadata& m) { set_key(m, "llama.block_count", uint32_t(2)); }),
               "tensor 'blk.1.attn_norm.weight' is missing");
  expect_error(meta([](Metadata& m) {
                 set_key(m, "llama.embedding_length", uint32_t(1 << 30));  // no allocation before the shape check
                 erase_key(m, "llama.rope.dimension_count");
               }),
               "tensor 'token_embd.weight' has shape [260, 8], expected [260, 1073741824]");
  expect_error(meta([](Metadata& m) { set_key(m, "tokenizer.ggml.model", "bert"); }),
               "tokenizer.ggml.model 'bert' is not supported");
  // A SentencePiece vocabulary relabelled as byte-level: its <unk> cannot be one.
  expect_error(meta([](Metadata& m) { set_key(m, "tokenizer.ggml.model", "gpt2"); }),
               "token 0 of a gpt2 vocabulary has type 2");
  expect_error(meta([](Metadata& m) {
                 set_key(m, "tokenizer.ggml.tokens", make_gguf_array(std::vector<std::string>(259, "x")));
                 erase_key(m, "llama.vocab_size");
               }),
               "tensor 'token_embd.weight' has shape [260, 8], expected [259, 8]");
  expect_error(meta([](Metadata& m) {
                 set_key(m, "tokenizer.ggml.tokens", make_gguf_array(std::vector<std::string>(259, "x")));
               }),
               "tokenizer has 259 tokens, the model's vocabulary 260");
  expect_error(meta([](Metadata& m) { set_key(m, "tokenizer.ggml.scores", make_gguf_array(std::vector<float>(3))); }),
               "invalid tokenizer");
  expect_error(meta([](Metadata& m) {
                 std::vector<int32_t> types(260, 1);
                 types[5] = 9;
                 set_key(m, "tokenizer.ggml.token_type", make_gguf_array(types));
               }),
               "token_type of id 5 is 9, not a llama token type (1-6)");
  expect_error(meta([](Metadata& m) { set_key(m, "tokenizer.ggml.eos_token_id", uint32_t(260)); }),
               "invalid tokenizer: Tokenizer: eos id 260 is outside the vocabulary");
  expect_error(meta([](Metadata& m) { set_key(m, "tokenizer.ggml.tokens", make_gguf_array(std::vector<float>(260))); }),
               "is an array of float32, expected an array of string");
  expect_error(tensors([](std::vector<TensorCopy>& t) {
                 std::erase_if(t, [](const TensorCopy& x) { return x.name == "blk.0.ffn_up.weight"; });
               }),
               "tensor 'blk.0.ffn_up.weight' is missing");
  expect_error(tensors([](std::vector<TensorCopy>& t) {
                 for (auto& x : t)
                   if (x.name == "output.weight") x.ne = {4, 520};
               }),
               "tensor 'output.weight' has shape [520, 4], expected [260, 8]");
}

// Llama 3.1 RoPE scaling as llama.cpp reads it (test_llama_cpp_architectures
// runs such files in llama.cpp): rope_freqs.weight, none of llama.cpp's own
// <arch>.rope.scaling.* keys (an unknown type aborts llama.cpp, a factor alone
// is linear scaling), the exact parameters in astrai.rope.llama3.*.
TEST_CASE("Llama 3.1 RoPE scaling in GGUF: llama.cpp's form, the exact parameters, older files", "[gguf_model]") {
  ModelConfig c = small_config(1, 2, 4, 6, 1, 260, 64);  // head_dim 8: 4 pairs
  c.rope_theta = 500000.0f;
  c.rope_scaling = RopeScaling{.factor = 8.0f, .low_freq_factor = 1.0f, .high_freq_factor = 4.0f, .original_context = 32};
  const auto src = small_model_file(c);
  const GgufReader file(src);
  CHECK(file.find_tensor("rope_freqs.weight") != nullptr);
  CHECK(!file.has("llama.rope.scaling.type"));
  CHECK(!file.has("llama.rope.scaling.factor"));
  CHECK(!file.has("llama.rope.scaling.original_context_length"));
  const auto scaling_of = [](const std::string& path) { return read_gguf_model(path).weights.config.rope_scaling; };
  auto same = [](const RopeScaling& a, const RopeScaling& b) {
    return a.factor == b.factor && a.low_freq_factor == b.low_freq_factor && a.high_freq_factor == b.high_freq_factor &&
           a.original_context == b.original_context;
  };
  CHECK(same(scaling_of(src), c.rope_scaling));  // parameters no table alone determines (original context 32)

  const auto astrai_keys = {"factor", "low_freq_factor", "high_freq_factor", "original_context_length"};
  const auto without_astrai_keys = [&](Metadata& m, std::vector<TensorCopy>&) {
    for (const char* k : astrai_keys) erase_key(m, std::string("astrai.rope.llama3.") + k);
  };
  // llama.cpp's converter writes the table only: read with Meta's parameters
  // (original context 8192), so this table (made for 32) is refused...
  CHECK_THROWS_WITH(read_gguf_model(rewrite_gguf(src, without_astrai_keys)), Contains("not Llama 3 scaling's"));
  // ...and one made for Meta's parameters is read as they are.
  ModelConfig meta_config = c;
  meta_config.rope_scaling.original_context = 8192;
  // RoPE base 500000, head_dim 8: wavelengths 6, 167, 4450 and 118000 positions,
  // so pairs 0 and 1 unscaled, 2 in the smooth band, 3 scaled by the factor.
  const auto meta_file = rewrite_gguf(small_model_file(meta_config), without_astrai_keys);
  CHECK(same(scaling_of(meta_file), meta_config.rope_scaling));

  // Files AstrAI wrote before: the parameters under llama.cpp's names, type "llama3".
  const auto older = rewrite_gguf(src, [&](Metadata& m, std::vector<TensorCopy>& t) {
    without_astrai_keys(m, t);
    set_key(m, "llama.rope.scaling.type", "llama3");
    set_key(m, "llama.rope.scaling.factor", 8.0f);
    set_key(m, "llama.rope.scaling.low_freq_factor", 1.0f);
    set_key(m, "llama.rope.scaling.high_freq_factor", 4.0f);
    set_key(m, "llama.rope.scaling.original_context_length", uint32_t(32));
  });
  CHECK(same(scaling_of(older), c.rope_scaling));

  // What would make llama.cpp run another model than this engine is refused.
  CHECK_THROWS_WITH(read_gguf_model(rewrite_gguf(src, [](Metadata& m, std::vector<TensorCopy>&) {
                      set_key(m, "llama.rope.scaling.type", "longrope");
                    })),
                    Contains("RoPE scaling 'longrope' is not supported"));
  CHECK_THROWS_WITH(read_gguf_model(rewrite_gguf(src, [](Metadata& m, std::vector<TensorCopy>&) {
                      set_key(m, "llama.rope.scaling.factor", 4.0f);
                    })),
                    Contains("two scalings at once"));
  CHECK_THROWS_WITH(read_gguf_model(rewrite_gguf(src, [](Metadata& m, std::vector<TensorCopy>&) {
                      set_key(m, "llama.rope.scaling.type", "yarn");
                      set_key(m, "llama.rope.scaling.factor", 4.0f);
                    })),
                    Contains("two scalings at once"));
  CHECK_THROWS_WITH(read_gguf_model(rewrite_gguf(src, [](Metadata&, std::vector<TensorCopy>& t) {
                      std::erase_if(t, [](const TensorCopy& x) { return x.name == "rope_freqs.weight"; });
                    })),
                    Contains("without rope_freqs.weight"));
  CHECK_THROWS_WITH(read_gguf_model(rewrite_gguf(src, [](Metadata& m, std::vector<TensorCopy>&) {
                      set_key(m, "astrai.rope.llama3.factor", 4.0f);
                    })),
                    Contains("rope_freqs.weight pair"));
  // llama.cpp's qwen2/qwen3 have no per-pair factors: such a model is not written.
  ModelConfig qwen = c;
  qwen.options.qkv_bias = true;
  qwen.rope_layout = RopeLayout::RotateHalf;
  CHECK_THROWS_WITH(write_gguf_model(astrai::test::scratch_file("qwen-scaled").string(), make_synthetic_weights(qwen, 1),
                                     make_synthetic_tokenizer(qwen.vocab_size), GgufDType::F32, "x"),
                    Contains("llama.cpp's qwen2 has no per-pair RoPE factors"));
}

TEST_CASE("write_gguf_model refuses what a GGUF file cannot hold", "[gguf_model]") {
  const ModelConfig c = small_config(1, 2, 2, 6, 1, 260, 8);
  ModelWeights w = make_synthetic_weights(c, 3);
  const auto path = astrai::test::scratch_file("refused").string();
  REQUIRE_THROWS_WITH(write_gguf_model(path, w, make_synthetic_tokenizer(261), GgufDType::F32, "x"),
                      Contains("tokenizer has 261 pieces, the model's vocabulary 260"));
  w.layers[0].wq = xt::zeros<float>({3, 3});
  REQUIRE_THROWS_WITH(write_gguf_model(path, w, make_synthetic_tokenizer(260), GgufDType::F32, "x"),
                      Contains("layer 0 wq has shape [3, 3]"));
  CHECK(parse_gguf_dtype("f32") == GgufDType::F32);
  CHECK(parse_gguf_dtype("f16") == GgufDType::F16);
  CHECK(parse_gguf_dtype("bf16") == GgufDType::BF16);
  REQUIRE_THROWS_WITH(parse_gguf_dtype("q5_k"),
                      "unknown GGUF tensor type 'q5_k' (choose f32, f16, bf16, q8_0, q4_0, q4_k or q6_k)");
}

TEST_CASE("a sliding window in GGUF: llama.cpp's key, read back; mixed layers and other scalings refused", "[gguf_model]") {
  ModelConfig c = small_config(1, 2, 2, 6, 2, 260, 64);
  c.sliding_window = 16;
  const ModelWeights w = make_synthetic_weights(c, 5);
  const auto path = astrai::test::scratch_file("window").string();
  write_gguf_model(path, w, make_synthetic_tokenizer(260), GgufDType::F32, "x");
  CHECK(GgufReader(path).get_int("llama.attention.sliding_window") == 16);
  const ModelConfig back = read_gguf_model(path).weights.config;
  CHECK(back.sliding_window == 16);
  CHECK(back.sliding_layers.empty());
  ModelWeights mixed = w;
  mixed.config.sliding_layers = {true, false};
  REQUIRE_THROWS_WITH(write_gguf_model(path, mixed, make_synthetic_tokenizer(260), GgufDType::F32, "x"),
                      Contains("mixes sliding and full layers"));
  // YaRN: llama.cpp's keys, and AstrAI's for the rounding llama.cpp does
  // not record; read back whole, an attention factor too.
  for (const bool truncate : {true, false}) {
    ModelWeights yarn = w;
    yarn.config.rope_scaling = RopeScaling{.factor = 4.0f, .original_context = 32, .kind = RopeScalingKind::Yarn,
                                           .truncate = truncate, .attention_factor = truncate ? 0.0f : 1.5f};
    write_gguf_model(path, yarn, make_synthetic_tokenizer(260), GgufDType::F32, "x");
    const GgufReader g(path);
    CHECK(g.get_string("llama.rope.scaling.type") == "yarn");
    CHECK(g.get_float("llama.rope.scaling.factor") == 4.0);
    CHECK(g.get_int("llama.rope.scaling.original_context_length") == 32);
    CHECK(!g.has("llama.rope.scaling.yarn_beta_fast"));  // llama.cpp's llama would not read it
    CHECK(g.get_bool("astrai.rope.yarn.truncate") == truncate);
    // llama.cpp multiplies its own (1 + 0.1 ln factor) by attn_factor.
    CHECK(g.has("llama.rope.scaling.attn_factor") == !truncate);
    if (!truncate)
      CHECK(std::abs(g.get_float("llama.rope.scaling.attn_factor") * (1.0 + 0.1 * std::log(4.0)) - 1.5) < 1e-6);
    const RopeScaling back = read_gguf_model(path).weights.config.rope_scaling;
    CHECK(back.kind == RopeScalingKind::Yarn);
    CHECK(back.truncate == truncate);
    CHECK(back.beta_fast == 32.0f);
    CHECK(back.original_context == 32);
    CHECK(std::abs(back.attention_factor - yarn.config.rope_scaling.attention_factor) < 1e-6f);
  }
  // Linear scaling: llama.cpp's own keys, read back.
  ModelWeights linear = w;
  linear.config.rope_scaling = RopeScaling{.factor = 8.0f, .kind = RopeScalingKind::Linear};
  write_gguf_model(path, linear, make_synthetic_tokenizer(260), GgufDType::F32, "x");
  CHECK(GgufReader(path).get_string("llama.rope.scaling.type") == "linear");
  CHECK(read_gguf_model(path).weights.config.rope_scaling == linear.config.rope_scaling);
}

namespace {

// A small Mixture-of-Experts model of llama.cpp's `gguf_arch` ("llama" with
// experts: Mixtral, "qwen2moe" with a shared expert, "qwen3moe").
ModelConfig moe_config(const std::string& gguf_arch, int experts, int used) {
  ModelConfig c = small_config(1, 2, 2, 6, 2, 260, 8);
  c.rope_layout = gguf_arch == "llama" ? RopeLayout::AdjacentPairs : RopeLayout::RotateHalf;
  c.options.moe = gguf_arch == "llama" ? MoeModule::BlockSparseMoe : MoeModule::Mlp;
  c.options.qkv_bias = c.options.shared_expert = gguf_arch == "qwen2moe";
  c.options.qk_norm = gguf_arch == "qwen3moe";
  c.moe = {.n_experts = experts, .n_experts_used = used, .expert_hidden_dim = gguf_arch == "llama" ? 6 : 5,
           .norm_topk_prob = gguf_arch != "qwen2moe", .shared_expert_hidden_dim = gguf_arch == "qwen2moe" ? 7 : 0};
  return c;
}

// "" when every tensor of the config has the bits of `original` stored as
// `dtype` (vectors and routers float32), walking the weight table.
std::string compare_by_table(const ModelWeights& got, const ModelWeights& original, GgufDType dtype) {
  const ModelSource g = model_source(got), o = model_source(original);
  for (const auto& t : model_tensors(original.config, false)) {
    const std::vector<float> gv = g.read(t), ov = o.read(t);
    if (gv.size() != ov.size()) return t.gguf_name() + ": sizes differ";
    const bool exact = t.shape.size() == 1 || t.row->keep_f32;
    for (size_t i = 0; i < gv.size(); ++i) {
      const float want = exact ? ov[i] : astrai::test::stored_value(ov[i], dtype);
      if (std::bit_cast<uint32_t>(gv[i]) != std::bit_cast<uint32_t>(want))
        return t.gguf_name() + "[" + std::to_string(i) + "] differs";
    }
  }
  return "";
}

}  // namespace

TEST_CASE("gpt-oss's clamped SwiGLU is refused by the other MoE families' writers, GGUF and config.json", "[gguf_model]") {
  // Written as qwen3moe, the limit would be dropped and the model run as another.
  ModelConfig c = moe_config("qwen3moe", 4, 2);
  c.moe.swiglu_limit = 7.0f;
  const ModelWeights w = make_synthetic_weights(c, 3);
  CHECK_THROWS_WITH(write_gguf_model(astrai::test::scratch_file("limit").string(), w, make_synthetic_tokenizer(260),
                                     GgufDType::F32, "x"),
                    Contains("has no clamped SwiGLU"));
  CHECK_THROWS_WITH(hf_config_json(c, HfArchitecture::Qwen3Moe, false, "float32"), Contains("has no clamped SwiGLU"));
}

// A small gpt-oss: biases everywhere, sinks, top-k then softmax, the clamped
// SwiGLU at llama.cpp's limit, even layers sliding.
ModelConfig gpt_oss_config(int layers) {
  ModelConfig c = small_config(1, 2, 2, 6, layers, 260, 16);
  c.rope_layout = RopeLayout::RotateHalf;
  c.options = {.qkv_bias = true, .moe = MoeModule::GptOss, .router_bias = true, .attention_sinks = true,
               .expert_biases = true, .out_bias = true};
  c.moe = {.n_experts = 4, .n_experts_used = 2, .expert_hidden_dim = 5, .routing = ExpertRouting::TopKSoftmax,
           .swiglu_limit = 7.0f};
  c.sliding_window = 4;
  for (int l = 0; l < layers; ++l) c.sliding_layers.push_back(l % 2 == 0);
  return c;
}

TEST_CASE("gpt-oss GGUF round trip: llama.cpp's gpt-oss keys and tensor names, windows, YaRN", "[gguf_model]") {
  const ModelConfig c = gpt_oss_config(3);
  const ModelWeights original = make_synthetic_weights(c, 13);
  const auto path = astrai::test::scratch_file("gpt-oss").string();
  write_gguf_model(path, original, make_synthetic_tokenizer(c.vocab_size), GgufDType::BF16, "oss");
  const GgufReader g(path);
  CHECK(g.get_string("general.architecture") == "gpt-oss");
  CHECK(g.get_int("gpt-oss.expert_count") == 4);
  CHECK(g.get_int("gpt-oss.expert_feed_forward_length") == 5);  // llama.cpp requires it
  CHECK(g.get_int("gpt-oss.attention.sliding_window") == 4);
  CHECK(!g.has("gpt-oss.attention.sliding_window_pattern"));  // llama.cpp's default 2
  // Shapes as llama.cpp's openai-moe.cpp creates them (ne order), biases F32.
  using N = std::vector<uint64_t>;
  CHECK(g.find_tensor("blk.0.attn_sinks.weight")->ne == N{2});  // one per query head
  CHECK(g.find_tensor("blk.0.attn_output.bias")->ne == N{8});
  CHECK(g.find_tensor("blk.0.post_attention_norm.weight")->ne == N{8});
  CHECK(!g.find_tensor("blk.0.ffn_norm.weight"));
  CHECK(g.find_tensor("blk.0.ffn_gate_inp.bias")->ne == N{4});
  CHECK(g.find_tensor("blk.0.ffn_gate_exps.bias")->ne == N{5, 4});
  CHECK(g.find_tensor("blk.0.ffn_down_exps.bias")->ne == N{8, 4});
  CHECK(g.find_tensor("blk.0.ffn_gate_exps.bias")->type == GgmlType::F32);
  CHECK(g.find_tensor("blk.0.ffn_gate_exps.weight")->type == GgmlType::BF16);
  CHECK(g.find_tensor("output.weight"));  // llama.cpp's gpt-oss requires it
  const GgufModel back = read_gguf_model(path);
  CHECK(back.weights.config.describe() == c.describe());
  CHECK(back.weights.config.moe == c.moe);
  CHECK(back.weights.config.sliding_layers == c.sliding_layers);
  CHECK(compare_by_table(back.weights, original, GgufDType::BF16) == "");

  // Another pattern (every third layer full) is written as llama.cpp's key;
  // a file without the window key is refused, as llama.cpp refuses it.
  ModelWeights third = original;
  third.config.sliding_layers = {true, true, false};
  write_gguf_model(path, third, make_synthetic_tokenizer(c.vocab_size), GgufDType::F32, "oss");
  CHECK(GgufReader(path).get_int("gpt-oss.attention.sliding_window_pattern") == 3);
  CHECK(read_gguf_model(path).weights.config.sliding_layers == third.config.sliding_layers);
  ModelWeights odd = original;
  odd.config.sliding_layers = {false, true, true};
  CHECK_THROWS_WITH(write_gguf_model(path, odd, make_synthetic_tokenizer(c.vocab_size), GgufDType::F32, "oss"),
                    Contains("not such a pattern"));
  // gpt-oss's YaRN: a file without AstrAI's rounding key (llama.cpp's
  // converter's) is read as gpt-oss's configs say, truncate false.
  ModelWeights yarn = original;
  yarn.config.rope_scaling = RopeScaling{.factor = 32.0f, .original_context = 8, .kind = RopeScalingKind::Yarn,
                                         .truncate = false};
  write_gguf_model(path, yarn, make_synthetic_tokenizer(c.vocab_size), GgufDType::F32, "oss");
  const auto without_key = rewrite_gguf(path, [](Metadata& m, auto&) { erase_key(m, "astrai.rope.yarn.truncate"); });
  CHECK(read_gguf_model(without_key).weights.config.rope_scaling == yarn.config.rope_scaling);
  yarn.config.rope_scaling.beta_fast = 8.0f;  // llama.cpp would run 32
  CHECK_THROWS_WITH(write_gguf_model(path, yarn, make_synthetic_tokenizer(c.vocab_size), GgufDType::F32, "oss"),
                    Contains("beta_fast 32"));
  // A file with the beta keys (another converter's) is read as it says.
  yarn.config.rope_scaling.beta_fast = 32.0f;
  write_gguf_model(path, yarn, make_synthetic_tokenizer(c.vocab_size), GgufDType::F32, "oss");
  const auto betas = rewrite_gguf(path, [](Metadata& m, auto&) { set_key(m, "gpt-oss.rope.scaling.yarn_beta_fast", 16.0f); });
  CHECK(read_gguf_model(betas).weights.config.rope_scaling.beta_fast == 16.0f);
  ModelWeights limit = original;
  limit.config.moe.swiglu_limit = 5.0f;
  CHECK_THROWS_WITH(write_gguf_model(path, limit, make_synthetic_tokenizer(c.vocab_size), GgufDType::F32, "oss"),
                    Contains("clamps its SwiGLU at 7"));
  const auto no_window = rewrite_gguf(path, [](Metadata& m, auto&) { erase_key(m, "gpt-oss.attention.sliding_window"); });
  CHECK_THROWS_WITH(read_gguf_model(no_window), Contains("gpt-oss.attention.sliding_window"));
}

TEST_CASE("Mixture-of-Experts GGUF round trip: llama.cpp's keys, stacked experts, F32 routers", "[gguf_model]") {
  for (const std::string arch : {"llama", "qwen2moe", "qwen3moe"}) {
    for (const auto dtype : {GgufDType::F32, GgufDType::BF16, GgufDType::Q8_0}) {
      INFO(arch << " " << gguf_dtype_name(dtype));
      const ModelConfig c = moe_config(arch, 4, 2);
      ModelWeights original = make_synthetic_weights(c, 11);
      original.classifier = original.token_embedding;  // tied
      const auto path = astrai::test::scratch_file("moe").string();
      write_gguf_model(path, original, make_synthetic_tokenizer(c.vocab_size), dtype, "moe");
      const GgufReader g(path);
      CHECK(g.get_string("general.architecture") == arch);
      CHECK(g.get_int(arch + ".expert_count") == 4);
      CHECK(g.get_int(arch + ".expert_used_count") == 2);
      CHECK(g.has(arch + ".expert_feed_forward_length") == (arch != "llama"));
      CHECK(g.has(arch + ".expert_shared_feed_forward_length") == (arch == "qwen2moe"));
      CHECK(g.find_tensor("blk.1.ffn_gate_inp.weight")->type == GgmlType::F32);
      CHECK(g.find_tensor("blk.1.ffn_gate_exps.weight")->ne == std::vector<uint64_t>{8, uint64_t(c.moe.expert_hidden_dim), 4});
      CHECK(g.find_tensor("blk.1.ffn_down_exps.weight")->ne == std::vector<uint64_t>{uint64_t(c.moe.expert_hidden_dim), 8, 4});
      if (dtype != GgufDType::F32) CHECK(g.find_tensor("blk.1.ffn_gate_exps.weight")->type != GgmlType::F32);
      // qwen2moe's loader needs output.weight even for a tied classifier.
      CHECK((g.find_tensor("output.weight") != nullptr) == (arch == "qwen2moe"));
      const GgufModel back = read_gguf_model(path);
      CHECK(back.weights.config.moe == c.moe);
      CHECK(back.weights.config.options == c.options);
      const std::string diff = dtype == GgufDType::Q8_0 ? "" : compare_by_table(back.weights, original, dtype);
      CHECK(diff == "");
      std::filesystem::remove(path);
    }
  }
}

TEST_CASE("write_gguf_model refuses Mixture-of-Experts models llama.cpp would run differently", "[gguf_model]") {
  const auto path = astrai::test::scratch_file("refused-moe").string();
  auto refusal = [&](ModelConfig c) {
    try {
      write_gguf_model(path, make_synthetic_weights(c, 1), make_synthetic_tokenizer(c.vocab_size), GgufDType::F32, "x");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("written");
  };
  ModelConfig dense_first = moe_config("qwen3moe", 4, 2);
  dense_first.moe.dense_layers = {0};
  CHECK_THAT(refusal(dense_first), Contains("llama.cpp's qwen3moe has experts in every layer; layer 0 of this model is dense"));
  ModelConfig unnormalised = moe_config("qwen3moe", 4, 2);
  unnormalised.moe.norm_topk_prob = false;
  CHECK_THAT(refusal(unnormalised), Contains("qwen3moe always renormalises the top-k weights"));
  ModelConfig normalised = moe_config("qwen2moe", 4, 2);
  normalised.moe.norm_topk_prob = true;
  CHECK_THAT(refusal(normalised), Contains("qwen2moe never renormalises"));
  ModelConfig narrow = moe_config("llama", 4, 2);
  narrow.moe.expert_hidden_dim = 3;
  CHECK_THAT(refusal(narrow), Contains("experts are feed_forward_length wide (6), not 3"));
}

TEST_CASE("GGUF reader names what is wrong with a Mixture-of-Experts file", "[gguf_model]") {
  const ModelConfig c = moe_config("qwen3moe", 4, 2);
  const auto path = astrai::test::scratch_file("moe-src").string();
  write_gguf_model(path, make_synthetic_weights(c, 5), make_synthetic_tokenizer(c.vocab_size), GgufDType::F32, "m");
  auto error_after = [&](const std::function<void(Metadata&, std::vector<TensorCopy>&)>& edit) {
    const auto bad = rewrite_gguf(path, edit);
    try {
      (void)read_gguf_model(bad);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("read");
  };
  CHECK_THAT(error_after([](Metadata& m, auto&) { set_key(m, "qwen3moe.expert_used_count", uint32_t(5)); }),
             Contains("moe.n_experts_used (5) must lie in [1, n_experts = 4]"));
  CHECK_THAT(error_after([](Metadata& m, auto&) { erase_key(m, "qwen3moe.expert_count"); }),
             Contains("architecture 'qwen3moe' without expert_count is not supported"));
  CHECK_THAT(error_after([](Metadata&, auto& tensors) { std::erase_if(tensors, [](const auto& t) { return t.name == "blk.1.ffn_up_exps.weight"; }); }),
             Contains("blk.1.ffn_up_exps.weight"));
  CHECK_THAT(error_after([](Metadata& m, auto&) { set_key(m, "qwen3moe.expert_count", uint32_t(3)); }),
             Contains("blk.0.ffn_gate_inp.weight' has shape"));
}
