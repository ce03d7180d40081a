// Streaming conversion (model_source.h): a model written tensor by tensor is
// the file the whole-model path writes, byte for byte.
//
// Why exact equality holds: both paths hand the GGUF writer the same float32
// values in the same order (the weight table's), and every later step
// (RoPE reordering, rounding, quantization, layout) is a deterministic
// function of those values. So any difference is a bug in what the
// streaming side reads (a wrong tensor, offset or layer), not rounding.
// The oracles are independent of the streaming code: make_synthetic_weights
// draws the whole model sequentially, load_hf_folder reads it whole.
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <cstring>
#include <filesystem>

#include "engine/model_files/gguf/gguf_model.h"
#include "engine/model_files/gguf/gguf_writer.h"
#include "engine/model_files/hf/hf_folder.h"
#include "engine/model_files/model_source.h"
#include "engine/model_files/rope_layout.h"
#include "engine/text/read_file.h"
#include "engine/tokenizer/synthetic_tokenizer.h"
#include "reference/synthetic_model.h"
#include "tests/engine/model_files/gguf_test_files.h"

using namespace astrai;
namespace fs = std::filesystem;

namespace {

// A small valid config of any architecture's options, head_dim explicit or not.
rc::Gen<ModelConfig> gen_config() {
  return rc::gen::apply(
      [](int kv, int group, int half_head, int hidden, int layers, int vocab, int option, bool explicit_head) {
        ModelConfig c;
        c.n_kv_heads = kv;
        c.n_heads = kv * group;
        c.dim = c.n_heads * half_head * 2;
        if (explicit_head) c.explicit_head_dim = half_head * 2 + 2;  // wider than dim / heads, as Qwen 3's
        c.hidden_dim = hidden;
        c.n_layers = layers;
        c.vocab_size = vocab;
        c.max_seq_len = 32;
        c.options.qkv_bias = option == 1;
        c.options.qk_norm = option == 2;
        if (option == 3) c.rope_scaling = {.factor = 8.0f, .low_freq_factor = 1.0f, .high_freq_factor = 4.0f,
                                           .original_context = 8};
        return c;
      },
      rc::gen::inRange(1, 3), rc::gen::inRange(1, 3), rc::gen::inRange(1, 5), rc::gen::inRange(1, 40),
      rc::gen::inRange(1, 4), rc::gen::inRange(259, 300), rc::gen::inRange(0, 4), rc::gen::arbitrary<bool>());
}

std::string file_bytes(const fs::path& p) { return read_whole_file(p.string(), p.string()); }

}  // namespace

TEST_CASE("synthetic_tensor makes each tensor of make_synthetic_weights alone, bit for bit") {
  rc::prop("every tensor, every layer", [] {
    const ModelConfig c = *gen_config();
    const auto seed = *rc::gen::arbitrary<uint64_t>();
    const ModelWeights whole = make_synthetic_weights(c, seed);
    for (const ModelTensor& t : model_tensors(c, /*tied=*/false)) {
      const std::vector<float> alone = synthetic_tensor(c, seed, t.row->field, t.layer);
      visit_weight(whole, t, [&](const auto& field) {
        RC_ASSERT(alone.size() == field.size());
        RC_ASSERT(std::memcmp(alone.data(), field.data(), alone.size() * sizeof(float)) == 0);
      });
    }
  });
  ModelConfig c;
  c.dim = 8, c.hidden_dim = 8, c.n_layers = 2, c.n_heads = 2, c.n_kv_heads = 2, c.vocab_size = 300;
  CHECK_THROWS_AS(synthetic_tensor(c, 1, &LayerWeights::bq, 0), std::invalid_argument);  // no qkv_bias
  CHECK_THROWS_AS(synthetic_tensor(c, 1, &LayerWeights::wq, 2), std::invalid_argument);  // no layer 2
}

TEST_CASE("make-model's streamed GGUF is the whole-model path's file, every dtype") {
  rc::prop("random configs, dtypes, ties", [] {
    const ModelConfig c = *gen_config();
    const auto seed = *rc::gen::inRange<uint64_t>(0, 1000);
    const bool tied = *rc::gen::arbitrary<bool>();
    const GgufDType dtype = *rc::gen::element(GgufDType::F32, GgufDType::F16, GgufDType::BF16, GgufDType::Q8_0,
                                              GgufDType::Q4_0, GgufDType::Q4_K, GgufDType::Q6_K);
    if (c.rope_scaling.enabled()) RC_PRE(!c.options.qkv_bias && !c.options.qk_norm);  // llama.cpp scales Llama only
    const Tokenizer tokenizer = make_synthetic_tokenizer(c.vocab_size);
    ModelWeights weights = make_synthetic_weights(c, seed);
    if (tied) weights.classifier = weights.token_embedding;
    const auto whole = test::scratch_file("whole"), streamed = test::scratch_file("streamed");
    write_gguf_model(whole.string(), weights, tokenizer, dtype, "m");
    write_gguf_model(streamed.string(), synthetic_model_source(c, seed, tied), tokenizer, dtype, "m");
    RC_ASSERT(file_bytes(whole) == file_bytes(streamed));
    fs::remove(whole);
    fs::remove(streamed);
  });
}

TEST_CASE("make-model's streamed Hugging Face folder is the whole-model path's folder") {
  rc::prop("random configs, dtypes, shards, ties", [] {
    const ModelConfig c = *gen_config();
    const auto seed = *rc::gen::inRange<uint64_t>(0, 1000);
    const bool tied = *rc::gen::arbitrary<bool>();
    const HfWriteOptions options{.dtype = *rc::gen::element(SafetensorsDType::F32, SafetensorsDType::F16,
                                                            SafetensorsDType::BF16),
                                 .max_shard_bytes = *rc::gen::element<uint64_t>(0, 700)};
    // The whole model in memory, moved to rotate-half as a whole, the tie made by copying.
    ModelWeights weights = with_rope_layout(make_synthetic_weights(c, seed), RopeLayout::RotateHalf);
    if (tied) weights.classifier = weights.token_embedding;
    const fs::path whole = test::scratch_file("whole-folder", ""), streamed = test::scratch_file("streamed-folder", "");
    write_hf_folder(whole.string(), weights, options);
    // Tensor by tensor: each made, moved and written alone (astrai make-model --format hf).
    write_hf_folder(streamed.string(), with_rope_layout(synthetic_model_source(c, seed, tied), RopeLayout::RotateHalf),
                    options);
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(whole)) names.push_back(entry.path().filename().string());
    RC_ASSERT(!names.empty());
    for (const auto& name : names) {
      RC_ASSERT(fs::exists(streamed / name));
      RC_ASSERT(file_bytes(whole / name) == file_bytes(streamed / name));
    }
    RC_ASSERT(size_t(std::distance(fs::directory_iterator(streamed), fs::directory_iterator{})) == names.size());
    fs::remove_all(whole);
    fs::remove_all(streamed);
  });
}

TEST_CASE("a Hugging Face folder streamed to GGUF is the file its whole load writes") {
  rc::prop("random folders: architectures, dtypes, shards, ties", [] {
    ModelConfig c = *gen_config();
    if (c.rope_scaling.enabled()) RC_PRE(!c.options.qkv_bias && !c.options.qk_norm);
    const bool tied = *rc::gen::arbitrary<bool>();
    const auto st = *rc::gen::element(SafetensorsDType::F32, SafetensorsDType::F16, SafetensorsDType::BF16);
    const GgufDType dtype = *rc::gen::element(GgufDType::F32, GgufDType::BF16, GgufDType::Q8_0, GgufDType::Q4_K);
    ModelWeights weights = with_rope_layout(make_synthetic_weights(c, 7), RopeLayout::RotateHalf);
    if (tied) weights.classifier = weights.token_embedding;
    const fs::path dir = test::scratch_file("folder", "");
    write_hf_folder(dir.string(), weights, {.dtype = st, .max_shard_bytes = *rc::gen::element<uint64_t>(0, 700)});
    const Tokenizer tokenizer = make_synthetic_tokenizer(c.vocab_size);
    const auto whole = test::scratch_file("whole"), streamed = test::scratch_file("streamed");
    write_gguf_model(whole.string(), load_hf_folder(dir.string()).weights, tokenizer, dtype, "m");
    const HfFolderSource source = open_hf_folder(dir.string());
    RC_ASSERT(source.weights.tied == tied);
    write_gguf_model(streamed.string(), source.weights, tokenizer, dtype, "m");
    RC_ASSERT(file_bytes(whole) == file_bytes(streamed));
    // Reading again after the first read released the pages gives the same values.
    write_gguf_model(whole.string(), source.weights, tokenizer, dtype, "m");
    RC_ASSERT(file_bytes(whole) == file_bytes(streamed));
    fs::remove_all(dir);
    fs::remove(whole);
    fs::remove(streamed);
  });
}

TEST_CASE("GgufWriter: a tensor made when written is the same bytes as one given up front") {
  const std::vector<float> values = {1.5f, -2.0f, 3.25f, 0.1f, 1e-8f, -0.0f, 70000.0f, 7.0f};
  for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::BF16}) {
    INFO(ggml_type_name(type));
    GgufWriter eager, lazy;
    eager.add_tensor("t", {4, 2}, values, type);
    lazy.add_tensor("t", {4, 2}, type, [&] { return values; });
    eager.add_tensor("u", {2}, std::span<const float>(values).first(2), GgmlType::F32);
    lazy.add_tensor("u", {2}, GgmlType::F32, [&] { return std::vector<float>(values.begin(), values.begin() + 2); });
    const auto a = test::scratch_file("eager"), b = test::scratch_file("lazy");
    eager.write(a.string());
    lazy.write(b.string());
    CHECK(file_bytes(a) == file_bytes(b));
  }
}

TEST_CASE("GgufWriter: a producer that makes the wrong count fails and leaves no file") {
  GgufWriter w;
  w.add_tensor("t", {4}, GgmlType::F32, [] { return std::vector<float>(3); });
  const auto path = test::scratch_file("short");
  CHECK_THROWS_WITH(w.write(path.string()), Catch::Matchers::Contains("its producer made 3"));
  CHECK_FALSE(fs::exists(path));
  CHECK_FALSE(fs::exists(path.string() + ".tmp"));
  // Arguments are checked when the tensor is added, before anything is made.
  CHECK_THROWS_AS(w.add_tensor("q", {33}, GgmlType::Q8_0, [] { return std::vector<float>(33); }), std::invalid_argument);
  CHECK_THROWS_AS(w.add_tensor("t", {4}, GgmlType::F32, [] { return std::vector<float>(4); }), std::invalid_argument);
}

TEST_CASE("RoPE layouts: the head rows are reordered pair by pair, every other tensor left as it is") {
  // The spec, written out by hand rather than from the weight table's
  // head_rows column: per head, adjacent-pairs row 2i is rotate-half row i
  // and row 2i + 1 is rotate-half row i + head_dim / 2, for wq, wk, their
  // biases and the q/k norms (one head's worth).
  rc::prop("random configs with biases or norms", [] {
    ModelConfig c = *gen_config();
    c.rope_scaling = {};
    const ModelWeights adjacent = make_synthetic_weights(c, 3);
    const ModelWeights half = with_rope_layout(adjacent, RopeLayout::RotateHalf);
    RC_ASSERT(half.config.rope_layout == RopeLayout::RotateHalf);
    const size_t head_dim = size_t(c.head_dim()), pairs = head_dim / 2;
    auto rows_of = [](const auto& t) { return t.shape()[0]; };
    auto cols_of = [](const auto& t) { return t.size() / t.shape()[0]; };
    auto check = [&](const auto& adj, const auto& rh) {
      RC_ASSERT(adj.shape() == rh.shape());
      const size_t cols = cols_of(adj);
      for (size_t h = 0; h < rows_of(adj) / head_dim; ++h)
        for (size_t i = 0; i < pairs; ++i)
          for (size_t k = 0; k < cols; ++k) {
            RC_ASSERT(adj.data()[(h * head_dim + 2 * i) * cols + k] == rh.data()[(h * head_dim + i) * cols + k]);
            RC_ASSERT(adj.data()[(h * head_dim + 2 * i + 1) * cols + k] ==
                      rh.data()[(h * head_dim + i + pairs) * cols + k]);
          }
    };
    for (size_t l = 0; l < adjacent.layers.size(); ++l) {
      const LayerWeights& a = adjacent.layers[l];
      const LayerWeights& r = half.layers[l];
      check(a.wq, r.wq);
      check(a.wk, r.wk);
      if (c.options.qkv_bias) {
        check(a.bq, r.bq);
        check(a.bk, r.bk);
        RC_ASSERT(a.bv == r.bv);
      }
      if (c.options.qk_norm) {
        check(a.q_norm, r.q_norm);
        check(a.k_norm, r.k_norm);
      }
      RC_ASSERT(a.wv == r.wv);
      RC_ASSERT(a.wo == r.wo);
      RC_ASSERT(a.w_up == r.w_up);
    }
    // And back again.
    const ModelWeights back = with_rope_layout(half, RopeLayout::AdjacentPairs);
    for (size_t l = 0; l < adjacent.layers.size(); ++l) RC_ASSERT(back.layers[l].wq == adjacent.layers[l].wq);
  });
}
