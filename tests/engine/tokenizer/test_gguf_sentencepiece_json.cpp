// A SentencePiece-style tokenizer.json written into a GGUF file as a `llama`
// vocabulary (tokens with '▁', scores, token types with the byte pieces, as
// llama.cpp's convert_hf_to_gguf stores such vocabularies) and read back by
// the GGUF loader: its score-based SentencePiece encoder must give Hugging
// Face's ids. Skips, saying so, when the npm test data is absent.
#include <catch2/catch.hpp>

#include <random>

#include "engine/model_files/gguf/gguf_model.h"
#include "engine/model_files/gguf/gguf_reader.h"
#include "engine/tokenizer/hf_tokenizer.h"
#include "reference/synthetic_model.h"
#include "tests/engine/model_files/llama_cpp_oracle.h"
#include "tests/engine/tokenizer/sentencepiece_json_files.h"
#include "tests/engine/tokenizer/tokenizers_js_oracle.h"
#include "tests/support/sanitized_build.h"

namespace {

using astrai::Tokenizer;

astrai::ModelWeights tiny_model(int vocab_size) {
  astrai::ModelConfig c{.dim = 8, .hidden_dim = 16, .n_layers = 1, .n_heads = 2, .n_kv_heads = 1,
                        .vocab_size = vocab_size, .max_seq_len = 32};
  return astrai::make_synthetic_weights(c, 7);
}

}  // namespace

TEST_CASE("GGUF llama vocabulary from a SentencePiece-style tokenizer.json: the same ids read back") {
  const Tokenizer* original = astrai::test::lenml_tokenizer("llama2", 32000 + 128);  // padded, as make-model pads
  if (!original) {
    ASTRAI_MISSING(astrai::test::lenml_tokenizer_json("llama2") << " not found (run npm ci in "
                     << astrai::test::bpe_oracle_dir() << ")");
    return;
  }
  const auto path = astrai::test::scratch_dir() / "spm-json-vocab.gguf";
  astrai::write_gguf_model(path.string(), tiny_model(original->vocab_size()), *original, astrai::GgufDType::F32, "m");
  const Tokenizer read = astrai::read_gguf_model(path.string()).tokenizer;
  CHECK(read.kind() == astrai::TokenizerKind::SentencePiece);
  CHECK(read.hf_sentencepiece() == nullptr);  // the run.c-style encoder, by scores
  CHECK(read.pieces() == original->pieces());
  CHECK(read.types() == original->types());
  CHECK(read.scores() == original->scores());
  CHECK((read.bos_id() == 1 && read.eos_id() == 2 && read.unk_id() == 0));
  CHECK(read.decode_token(28705, 32000 + 5).empty());  // padding decodes to nothing, as before the round trip

  // The score-based merge with the added tokens cut out first
  // (encode_with_special_tokens) against Hugging Face's rank-based one.
  std::mt19937 rng(7);
  std::vector<std::string> added = {"<s>", "</s>", "<unk>"};
  std::vector<std::string> texts = {"", "Hello world", "  two  spaces ", "a<s>b</s> c", "Zo\u00eb \U0001F600 \ua66e"};
  for (int i = astrai::test::kSanitizedBuild ? 100 : 2000; i > 0; --i) {
    std::string s;
    for (int k = 1 + int(rng() % 16); k > 0; --k) s += astrai::test::random_fragment(rng, added);
    texts.push_back(s);
  }
  int mismatches = 0;
  for (const std::string& text : texts) {
    const auto want = original->encode(text, false);
    if (read.encode_with_special_tokens(text) != want && ++mismatches <= 5) {
      INFO("text " << nlohmann::json(text).dump());
      CHECK(read.encode_with_special_tokens(text) == want);
    }
  }
  INFO(mismatches << " of " << texts.size() << " texts differ after the GGUF round trip");
  CHECK(mismatches == 0);
  CHECK(read.encode("Hello world", true) == original->encode("Hello world", true));
}

TEST_CASE("GGUF llama vocabulary: Metaspace and normalized added tokens are refused on write, naming why") {
  using astrai::test::SpmForm;
  std::vector<std::pair<SpmForm, const char*>> cases = {{SpmForm::MetaspaceFirst, "Metaspace pre-tokenizer"}};
  if (!astrai::test::kSanitizedBuild) cases.emplace_back(SpmForm::LegacyNormalizedAdded, "is normalized");  // same path
  for (const auto& [form, why] : cases) {
    const auto json = astrai::test::sentencepiece_json(form);
    if (!json) return;  // the case above says SKIPPED
    auto config = *json;
    config.replace_filename("tokenizer_config.json");
    const Tokenizer tok = Tokenizer::load_hf(json->string(), config.string());
    CHECK_THROWS_WITH(astrai::write_gguf_model((astrai::test::scratch_dir() / "spm-refused.gguf").string(),
                                               tiny_model(tok.vocab_size()), tok, astrai::GgufDType::F32, "m"),
                      Catch::Contains(why));
  }
}

TEST_CASE("GGUF llama vocabulary from Gemma 3's tokenizer.json: no space prefix; llama.cpp's ids read back",
          "[llama.cpp]") {
  const Tokenizer* original = astrai::test::lenml_tokenizer("gemma3", 262144);  // the model's embedding rows
  if (!original) {
    ASTRAI_MISSING(astrai::test::lenml_tokenizer_json("gemma3") << " not found (run npm ci in "
                     << astrai::test::bpe_oracle_dir() << ")");
    return;
  }
  if (!astrai::test::llama_cpp_oracle_available()) return;
  const auto path = astrai::test::scratch_dir() / "gemma3-vocab.gguf";
  astrai::write_gguf_model(path.string(), tiny_model(original->vocab_size()), *original, astrai::GgufDType::F32, "m");
  CHECK_FALSE(astrai::GgufReader(path.string()).get_bool("tokenizer.ggml.add_space_prefix"));
  const Tokenizer read = astrai::read_gguf_model(path.string()).tokenizer;
  CHECK_FALSE(read.add_space_prefix());
  CHECK(read.pieces() == original->pieces());
  CHECK(read.types() == original->types());
  CHECK(read.scores() == original->scores());

  // Texts with what Gemma's vocabulary treats apart: its turn markers, the
  // user-defined whitespace runs and HTML tags, <unk> typed in the text. Not
  // a '▁' typed in the text: llama.cpp and Hugging Face read it as a space,
  // this encoder (as run.c) falls back to its bytes (docs/tokenizer.md).
  std::mt19937 rng(11);
  const std::vector<std::string> added = {"<bos>", "<start_of_turn>", "<end_of_turn>", "<unk>", "<h1>", "</td>",
                                          "\n\n", "\t\t", "<unused7>", "<start_of_image>"};
  std::vector<std::string> texts = {"", "Hello world", " leading", "a  b", "x" + std::string(40, ' ') + "y",
                                    "<start_of_turn>user\nHi there<end_of_turn>\n<start_of_turn>model\n",
                                    "<table><tr><td>1</td></tr></table>", "\n\n\n\n", "Zo\u00eb \U0001F600"};
  for (int i = astrai::test::kSanitizedBuild ? 100 : 1000; i > 0; --i) {
    std::string s;
    for (int k = 1 + int(rng() % 16); k > 0; --k) s += astrai::test::random_fragment(rng, added);
    texts.push_back(s);
  }
  const auto llama_cpp = astrai::test::llama_cpp_tokenize(path, texts);
  // The same fixed texts every run (seed 11): an exact count, no chance in it.
  int differ_llama_cpp = 0, differ_hf = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto ids = read.encode_with_special_tokens(texts[i]);
    const auto hf = original->encode(texts[i], false);
    INFO("text " << nlohmann::json(texts[i]).dump());
    if (ids != llama_cpp[i] && ++differ_llama_cpp <= 3) CHECK(ids == llama_cpp[i]);
    if (ids != hf && ++differ_hf <= 3) CHECK(ids == hf);
  }
  std::printf("Gemma 3 vocabulary through GGUF: %d of %zu texts differ from llama.cpp's ids, %d from Hugging Face's\n",
              differ_llama_cpp, texts.size(), differ_hf);
  CHECK(differ_llama_cpp == 0);
  CHECK(differ_hf == 0);
}
