// Tokenizer on the real llama2.c vocabularies (Llama 2's 32000 pieces and
// stories260K's 512): ids from llama2.c's run.c (golden files) must come out
// exactly, and properties over random text: decode(encode(s)) == s, ids in
// range, and agreement with a plain transcription of run.c's encode.
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "engine/tokenizer/tokenizer.h"
#include "tests/engine/tokenizer/run_c_encode.h"
#include "tests/support/shared_data.h"
#include "tests/support/text_generators.h"

namespace {

using astrai::Tokenizer;

nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

void check_golden_cases(const Tokenizer& tok, const nlohmann::json& golden) {
  REQUIRE(golden.at("cases").size() > 0);
  for (const auto& c : golden.at("cases")) {
    const std::string text = c.at("text");
    const std::vector<int> expected = c.at("ids");
    INFO("text: \"" << text << "\"");
    CHECK(tok.encode(text) == expected);
    CHECK(tok.decode(expected) == text);
  }
}

struct RealVocab {
  const char* name;
  const char* path;
  int vocab_size;
};
constexpr RealVocab kLlama2{"llama2", "models/llama2-tokenizer/tokenizer.bin", 32000};
constexpr RealVocab kTok512{"tok512", "models/stories260K/tok512.bin", 512};

void check_round_trip_property(const Tokenizer& tok, const char* name) {
  const std::string label = std::string(name) + ": decode(encode(s)) == s, ids in range, ids == run.c's";
  const astrai::test::RunCEncoder run_c(tok);
  rc::prop(label, [&tok, &run_c] {
    const std::string text = *astrai::test::gen_utf8_text();
    const bool add_bos = *rc::gen::arbitrary<bool>();
    const auto ids = tok.encode(text, add_bos);
    for (const int id : ids) RC_ASSERT(id >= 0 && id < tok.vocab_size());
    RC_ASSERT(tok.decode(ids) == text);
    RC_ASSERT(ids == run_c.encode(text, add_bos));
  });
  rc::prop(std::string(name) + ": any bytes, even invalid UTF-8, round-trip", [&tok] {
    const std::string bytes = *astrai::test::gen_any_bytes();
    const auto ids = tok.encode(bytes, false);
    for (const int id : ids) RC_ASSERT(id >= 0 && id < tok.vocab_size());
    RC_ASSERT(tok.decode(ids) == bytes);
  });
}

void check_llama2c_layout(const Tokenizer& tok) {
  CHECK(tok.type(0) == astrai::TokenType::Unknown);
  CHECK(tok.type(1) == astrai::TokenType::Control);
  CHECK(tok.type(2) == astrai::TokenType::Control);
  for (int byte = 0; byte < 256; ++byte) {
    CHECK(tok.byte_token(uint8_t(byte)) == byte + 3);  // run.c's hard-wired "byte + 3"
    CHECK(tok.type(byte + 3) == astrai::TokenType::Byte);
  }
  for (int id = 259; id < tok.vocab_size(); ++id) CHECK(tok.type(id) == astrai::TokenType::Normal);
  // Run.c merges across BOS, this encoder does not: the same as long as no
  // piece extends the BOS piece.
  for (const auto& piece : tok.pieces())
    CHECK_FALSE((piece.size() > tok.piece(1).size() && piece.starts_with(tok.piece(1))));
}

}  // namespace

TEST_CASE("llama2 tokenizer: run.c's golden ids", "[tokenizer][shared]") {
  ASTRAI_REQUIRE_SHARED(model, kLlama2.path);
  ASTRAI_REQUIRE_SHARED(golden, "golden/llama2-tokenizer.json");
  const Tokenizer tok = Tokenizer::load_llama2c(model.string(), kLlama2.vocab_size);
  CHECK(tok.vocab_size() == 32000);
  check_llama2c_layout(tok);
  check_golden_cases(tok, read_json(golden));
}

TEST_CASE("tok512 tokenizer: run.c's golden ids", "[tokenizer][shared]") {
  ASTRAI_REQUIRE_SHARED(model, kTok512.path);
  ASTRAI_REQUIRE_SHARED(golden, "golden/tok512-tokenizer.json");
  const Tokenizer tok = Tokenizer::load_llama2c(model.string(), kTok512.vocab_size);
  check_llama2c_layout(tok);
  check_golden_cases(tok, read_json(golden));
}

TEST_CASE("tok512 tokenizer: stories260K prompts and greedy text from run.c", "[tokenizer][shared]") {
  ASTRAI_REQUIRE_SHARED(model, kTok512.path);
  ASTRAI_REQUIRE_SHARED(golden, "golden/stories260K-greedy.json");
  const Tokenizer tok = Tokenizer::load_llama2c(model.string(), kTok512.vocab_size);
  const nlohmann::json cases = read_json(golden).at("cases");
  for (const auto& c : cases) {
    const std::string prompt = c.at("prompt");
    const std::vector<int> prompt_ids = c.at("prompt_ids");
    INFO("prompt: \"" << prompt << "\"");
    CHECK(tok.encode(prompt) == prompt_ids);
    // run.c prints each sampled token after the one before it and stops at BOS.
    std::string text;
    int prev = prompt_ids.back();
    for (const int id : c.at("greedy_ids").get<std::vector<int>>()) {
      if (id == tok.bos_id()) break;
      text += tok.decode_token(prev, id);
      prev = id;
    }
    CHECK(text == c.at("greedy_text").get<std::string>());
  }
}

TEST_CASE("real vocabularies: random text round-trips and matches run.c", "[tokenizer][shared][property]") {
  for (const RealVocab& vocab : {kTok512, kLlama2}) {
    ASTRAI_REQUIRE_SHARED(model, vocab.path);
    const Tokenizer tok = Tokenizer::load_llama2c(model.string(), vocab.vocab_size);
    check_round_trip_property(tok, vocab.name);
  }
}

TEST_CASE("real vocabularies: special-looking text stays text", "[tokenizer][shared]") {
  for (const RealVocab& vocab : {kTok512, kLlama2}) {
    ASTRAI_REQUIRE_SHARED(model, vocab.path);
    const Tokenizer tok = Tokenizer::load_llama2c(model.string(), vocab.vocab_size);
    // Merges only ever see the spelled-out pieces, so "<0x41>" in the text
    // could only become the byte piece if the vocabulary had its halves.
    for (int byte = 0; byte < 256; ++byte) {
      const std::string text = "x" + tok.piece(3 + byte) + " <unk></s>\n<s>\n";
      CHECK(tok.decode(tok.encode(text)) == text);
    }
  }
}
