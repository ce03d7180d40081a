// load_model: format detection, the llama2.c tokenizer search, GGUF and
// llama2.c models through one entry point, conversion, and the synthetic
// tokenizer used by `astrai make-model`.
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <set>

#include "engine/model_files/llama2c/llama2c_checkpoint.h"
#include "engine/model_files/load_model.h"
#include "reference/synthetic_model.h"
#include "tests/engine/model_files/gguf_test_files.h"
#include "tests/engine/model_files/model_compare.h"

using namespace astrai;
using astrai::test::compare_weights;
using astrai::test::same_tokenizer;
using Catch::Matchers::Contains;

TEST_CASE("load_model reads stories260K with the tokenizer beside it", "[load_model]") {
  ASTRAI_REQUIRE_SHARED(model, "models/stories260K/stories260K.bin");
  ASTRAI_REQUIRE_SHARED(tok, "models/stories260K/tok512.bin");
  CHECK(detect_model_format(model.string()) == ModelFormat::Llama2c);
  CHECK(find_llama2c_tokenizer(model.string(), 512) == tok.string());
  const LoadedModel m = load_model(model.string());
  CHECK(m.format == ModelFormat::Llama2c);
  CHECK(m.name == "stories260K");
  CHECK(m.chat_template.empty());
  CHECK(m.weights.config.describe() == "dim=64 hidden=172 layers=5 heads=8 kv_heads=4 vocab=512 ctx=512");
  CHECK(same_tokenizer(m.tokenizer, Tokenizer::load_llama2c(tok.string(), 512)));
  CHECK(compare_weights(m.weights, load_llama2c_checkpoint(model.string()), GgufDType::F32) == "");

  // Converted to GGUF, the same model comes back through the same entry point.
  const auto gguf = astrai::test::scratch_file("stories").string();
  convert_to_gguf(model.string(), "", gguf, GgufDType::F32);
  CHECK(detect_model_format(gguf) == ModelFormat::Gguf);
  const LoadedModel g = load_model(gguf);
  CHECK(g.format == ModelFormat::Gguf);
  CHECK(g.name == "stories260K");
  CHECK(compare_weights(g.weights, m.weights, GgufDType::F32) == "");
  CHECK(same_tokenizer(g.tokenizer, m.tokenizer));
  // A tokenizer path given for a GGUF replaces the file's own vocabulary.
  CHECK(same_tokenizer(load_model(gguf, tok.string()).tokenizer, m.tokenizer));
  REQUIRE_THROWS_WITH(convert_to_gguf(gguf, "", gguf + ".2", GgufDType::F32), Contains("already a GGUF"));
}

TEST_CASE("load_model explains a missing tokenizer or model", "[load_model]") {
  ASTRAI_REQUIRE_SHARED(model, "models/stories260K/stories260K.bin");
  ASTRAI_REQUIRE_SHARED(tok, "models/stories260K/tok512.bin");
  const auto dir = astrai::test::scratch_dir() / "lonely";
  std::filesystem::create_directories(dir);
  const auto copy = dir / "model.bin";
  std::filesystem::copy_file(model, copy, std::filesystem::copy_options::overwrite_existing);
  REQUIRE_THROWS_WITH(load_model(copy.string()),
                      copy.string() + ": a llama2.c checkpoint needs a tokenizer; none given and neither " +
                          (dir / "tok512.bin").string() + " nor " + (dir / "tokenizer.bin").string() + " exists");
  CHECK(load_model(copy.string(), tok.string()).tokenizer.vocab_size() == 512);
  // tokenizer.bin is the fallback name.
  std::filesystem::copy_file(tok, dir / "tokenizer.bin", std::filesystem::copy_options::overwrite_existing);
  CHECK(find_llama2c_tokenizer(copy.string(), 512) == (dir / "tokenizer.bin").string());
  CHECK(load_model(copy.string()).name == "model");
  REQUIRE_THROWS_WITH(load_model((dir / "absent.gguf").string()), Contains("absent.gguf: cannot open model file"));
}

TEST_CASE("write_gguf_model + load_model round trip a synthetic model", "[load_model]") {
  const ModelConfig c = preset_config("tiny");
  ModelWeights w = make_synthetic_weights(c, 5);
  w.config.vocab_size = 300;  // the tiny preset's 64 is below a byte-fallback vocabulary
  w = make_synthetic_weights(w.config, 5);
  const Tokenizer tok = make_synthetic_tokenizer(300);
  const auto path = astrai::test::scratch_file("tiny").string();
  write_gguf_model(path, w, tok, GgufDType::BF16, "tiny");
  const LoadedModel m = load_model(path);
  CHECK(m.name == "tiny");
  CHECK(compare_weights(m.weights, w, GgufDType::BF16) == "");
  CHECK(same_tokenizer(m.tokenizer, tok));
}

TEST_CASE("make_synthetic_tokenizer builds any vocabulary size from 259", "[load_model]") {
  REQUIRE_THROWS_WITH(make_synthetic_tokenizer(258), Contains("vocab_size 258 is below 259"));
  for (const int n : {259, 260, 354, 1000, 5000, 40000}) {
    INFO("vocab " << n);
    const Tokenizer t = make_synthetic_tokenizer(n);
    REQUIRE(t.vocab_size() == n);
    CHECK(t.piece(0) == "<unk>");
    CHECK(t.type(0) == TokenType::Unknown);
    CHECK(t.piece(1) == "<s>");
    CHECK(t.type(2) == TokenType::Control);
    CHECK(t.piece(3 + 0x41) == "<0x41>");
    CHECK(t.type(3 + 0xFF) == TokenType::Byte);
    CHECK(std::set<std::string>(t.pieces().begin(), t.pieces().end()).size() == size_t(n));  // all distinct
    for (int id = 259; id < n; ++id) {
      REQUIRE(t.type(id) == TokenType::Normal);
      REQUIRE(t.score(id) == -float(id - 259));
      // Every multi-character piece is its (earlier) prefix plus one character.
      const std::string& p = t.piece(id);
      if (p.size() > 1) REQUIRE(t.piece_id(p.substr(0, p.size() - 1)) > 258);
      REQUIRE(t.piece_id(p.substr(0, p.size() - 1)) < id);
    }
  }
  CHECK(make_synthetic_tokenizer(300).piece(259) == " ");
  CHECK(make_synthetic_tokenizer(400).piece(259 + 95) == " a");
  CHECK(make_synthetic_tokenizer(400).piece(259 + 95 + 26) == " aa");
  CHECK(make_synthetic_tokenizer(400).piece(259 + 95 + 27) == "aa");
  rc::prop("any text round-trips through encode and decode", [] {
    // From 260: at 259 there is no " " piece, so the dummy-prefix space is the
    // byte piece <0x20>, which decode keeps (as run.c does).
    const int n = *rc::gen::inRange(260, 2000);
    const auto text = *rc::gen::arbitrary<std::string>();
    const Tokenizer t = make_synthetic_tokenizer(n);
    RC_ASSERT(t.decode(t.encode(text)) == text);
  });
}
