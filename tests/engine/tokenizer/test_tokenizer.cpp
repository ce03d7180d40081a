// Tokenizer on small hand-built vocabularies: merge order and the leftmost tie
// rule worked out by hand, byte fallback, decoding rules, constructor
// validation, and the heap-based encoder against a plain transcription of
// run.c on random vocabularies full of score ties.
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <cmath>
#include <set>
#include <stdexcept>

#include "engine/tokenizer/byte_piece.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/engine/tokenizer/run_c_encode.h"

namespace {

using astrai::Tokenizer;
using astrai::TokenType;

// llama2.c's layout: 0 <unk>, 1 <s>, 2 </s>, 3..258 <0x00>..<0xFF>, then
// `normal` from id 259 on.
Tokenizer llama_layout_vocab(const std::vector<std::pair<std::string, float>>& normal) {
  std::vector<std::string> pieces{"<unk>", "<s>", "</s>"};
  std::vector<float> scores{0, 0, 0};
  std::vector<TokenType> types{TokenType::Unknown, TokenType::Control, TokenType::Control};
  for (int byte = 0; byte < 256; ++byte) {
    pieces.push_back(astrai::byte_piece_name(uint8_t(byte)));
    scores.push_back(0);
    types.push_back(TokenType::Byte);
  }
  for (const auto& [piece, score] : normal) {
    pieces.push_back(piece);
    scores.push_back(score);
    types.push_back(TokenType::Normal);
  }
  return Tokenizer(pieces, scores, types);
}

// Ids from 259:    " "   "a"   "b"   "c"   "ab" "bc" " a" "aa"  " ab"  "cc"
Tokenizer merge_rule_vocab() {
  return llama_layout_vocab({{" ", -100}, {"a", -100}, {"b", -100}, {"c", -100}, {"ab", -2}, {"bc", -1},
                             {" a", -3}, {"aa", -1}, {" ab", -0.5f}, {"cc", -2e10f}});
}
constexpr int kSpace = 259, kA = 260, kB = 261, kC = 262, kBC = 264, kSpaceA = 265, kAA = 266, kSpaceAB = 267;

}  // namespace

TEST_CASE("merges go by score, not by position", "[tokenizer]") {
  const Tokenizer tok = merge_rule_vocab();
  // "abc" starts as [" ", a, b, c]. Mergeable pairs: " a" (-3), "ab" (-2),
  // "bc" (-1). The best is "bc": [" ", a, bc]. Now "abc" is no piece, so only
  // " a" (-3) is left: [" a", bc]; " abc" is no piece. Merging left to right
  // instead would have given " a", then " ab" (-0.5): [" ab", c].
  CHECK(tok.encode("abc") == std::vector<int>{1, kSpaceA, kBC});
  // "ab": "ab" (-2) beats " a" (-3), then " " + "ab" makes " ab".
  CHECK(tok.encode("ab") == std::vector<int>{1, kSpaceAB});
}

TEST_CASE("equal scores merge the leftmost pair first", "[tokenizer]") {
  const Tokenizer tok = merge_rule_vocab();
  // "aaa" starts as [" ", a, a, a] with pairs " a" (-3), "aa" (-1), "aa" (-1).
  // The tie goes to the left "aa": [" ", aa, a]; neither " aa" nor "aaa" is a
  // piece, so that is final. The right "aa" first would give [" ", a, aa] and
  // then [" a", aa].
  CHECK(tok.encode("aaa") == std::vector<int>{1, kSpace, kAA, kA});
  CHECK(tok.encode("aaa", false) == std::vector<int>{kSpace, kAA, kA});
}

TEST_CASE("pieces scored at or below run.c's -1e10 floor never merge", "[tokenizer]") {
  const Tokenizer tok = merge_rule_vocab();
  CHECK(tok.encode("cc") == std::vector<int>{1, kSpace, kC, kC});
}

TEST_CASE("empty text, BOS and the dummy prefix", "[tokenizer]") {
  const Tokenizer tok = merge_rule_vocab();
  CHECK(tok.encode("") == std::vector<int>{1});
  CHECK(tok.encode("", false).empty());
  CHECK(tok.encode(" ", false) == std::vector<int>{kSpace, kSpace});
  CHECK(tok.decode(std::vector<int>{}) == "");
}

TEST_CASE("bytes outside the vocabulary fall back to <0xXX> pieces", "[tokenizer]") {
  const Tokenizer tok = merge_rule_vocab();
  // "é" is C3 A9; "\0" is one NUL byte, a byte like any other here.
  CHECK(tok.encode("é") == std::vector<int>{1, kSpace, 3 + 0xC3, 3 + 0xA9});
  CHECK(tok.encode(std::string_view("a\0b", 3)) == std::vector<int>{1, kSpaceA, 3 + 0, kB});
  CHECK(tok.decode(tok.encode("é")) == "é");
  for (int byte = 0; byte < 256; ++byte) CHECK(tok.byte_token(uint8_t(byte)) == 3 + byte);
}

TEST_CASE("byte fallback finds <0xXX> wherever the vocabulary puts it", "[tokenizer]") {
  // Bytes after the normal pieces, as some vocabularies lay them out.
  std::vector<std::string> pieces{"<unk>", "<s>", "</s>", " ", "x"};
  std::vector<float> scores(5, -1);
  std::vector<TokenType> types{TokenType::Unknown, TokenType::Control, TokenType::Control, TokenType::Normal,
                               TokenType::Normal};
  for (int byte = 0; byte < 256; ++byte) {
    pieces.push_back(astrai::byte_piece_name(uint8_t(byte)));
    scores.push_back(0);
    types.push_back(TokenType::Byte);
  }
  const Tokenizer moved(pieces, scores, types);
  CHECK(moved.encode("é") == std::vector<int>{1, 3, 5 + 0xC3, 5 + 0xA9});
  CHECK(moved.decode(moved.encode("xé")) == "xé");

  // No byte pieces at all: unknown bytes become <unk>.
  const Tokenizer bare({"<unk>", "<s>", "</s>", " ", "x"}, std::vector<float>(5, -1),
                       std::vector<TokenType>(types.begin(), types.begin() + 5));
  CHECK(bare.encode("xé", false) == std::vector<int>{3, 4, 0, 0});
  CHECK(bare.byte_token(0xC3) == 0);
}

TEST_CASE("decode_token: dummy prefix, raw bytes, control tokens", "[tokenizer]") {
  const Tokenizer tok = merge_rule_vocab();
  CHECK(tok.decode_token(1, kSpaceA) == "a");     // first piece after BOS loses the dummy space
  CHECK(tok.decode_token(kA, kSpaceA) == " a");   // elsewhere the space is text
  CHECK(tok.decode_token(1, 3 + 0x0A) == "\n");  // <0x0A>
  CHECK(tok.decode_token(kA, 3 + 0xFF) == std::string(1, '\xFF'));
  CHECK(tok.decode_token(kA, 1) == "");  // <s>
  CHECK(tok.decode_token(kA, 2) == "");  // </s>
  CHECK(tok.decode_token(kA, 0) == "<unk>");
  CHECK_THROWS_AS(tok.decode_token(1, tok.vocab_size()), std::invalid_argument);
  CHECK_THROWS_AS(tok.decode_token(1, -1), std::invalid_argument);
  // A sequence is read as if BOS preceded it; an explicit BOS reads the same.
  CHECK(tok.decode(std::vector<int>{kSpaceA, kBC}) == "abc");
  CHECK(tok.decode(std::vector<int>{1, kSpaceA, kBC}) == "abc");
  CHECK(tok.decode(std::vector<int>{1, kSpaceA, 2, 1, kSpaceA}) == "aa");
}

TEST_CASE("piece_id finds pieces, a repeated piece keeps its lowest id", "[tokenizer]") {
  const Tokenizer tok({"<unk>", "<s>", "</s>", "z", "z"}, {0, 0, 0, -1, -2},
                      {TokenType::Unknown, TokenType::Control, TokenType::Control, TokenType::Normal,
                       TokenType::Normal});
  CHECK(tok.piece_id("z") == 3);
  CHECK(tok.piece_id("<s>") == 1);
  CHECK(tok.piece_id("y") == -1);
}

TEST_CASE("the constructor rejects inconsistent vocabularies", "[tokenizer]") {
  const std::vector<std::string> pieces{"<unk>", "<s>", "</s>", "a"};
  const std::vector<float> scores{0, 0, 0, -1};
  const std::vector<TokenType> types{TokenType::Unknown, TokenType::Control, TokenType::Control, TokenType::Normal};
  CHECK_NOTHROW(Tokenizer(pieces, scores, types));
  CHECK_THROWS_AS(Tokenizer(pieces, {0, 0, 0}, types), std::invalid_argument);
  CHECK_THROWS_AS(Tokenizer(pieces, scores, {TokenType::Normal}), std::invalid_argument);
  CHECK_THROWS_AS(Tokenizer(pieces, scores, types, 4, 2, 0), std::invalid_argument);
  CHECK_THROWS_AS(Tokenizer(pieces, scores, types, 1, -1, 0), std::invalid_argument);
  CHECK_THROWS_AS(Tokenizer(pieces, scores, types, 1, 2, 7), std::invalid_argument);
  CHECK_THROWS_AS(Tokenizer({}, {}, {}), std::invalid_argument);
  CHECK_THROWS_AS(Tokenizer(pieces, {0, 0, 0, std::nanf("")}, types), std::invalid_argument);
  CHECK_THROWS_WITH(
      Tokenizer(pieces, scores, {TokenType::Unknown, TokenType::Control, TokenType::Control, TokenType::Byte}),
      Catch::Contains("id 3") && Catch::Contains("<0xXX>"));
}

TEST_CASE("byte piece names parse exactly", "[tokenizer]") {
  for (int byte = 0; byte < 256; ++byte)
    CHECK(astrai::parse_byte_piece(astrai::byte_piece_name(uint8_t(byte))) == uint8_t(byte));
  CHECK(astrai::parse_byte_piece("<0x0a>") == uint8_t(0x0A));
  CHECK_FALSE(astrai::parse_byte_piece("<0x0G>"));
  CHECK_FALSE(astrai::parse_byte_piece("<0x0A"));
  CHECK_FALSE(astrai::parse_byte_piece("<0x0A>>"));
  CHECK_FALSE(astrai::parse_byte_piece("[0x0A]"));
}

TEST_CASE("heap encoder equals run.c's rescanning loop on random tie-heavy vocabularies", "[tokenizer]") {
  rc::prop("encode == run_c_encode", [] {
    // Pieces over a 4-letter alphabet with only three distinct scores, so
    // ties between mergeable pairs are the rule rather than the exception.
    const auto letter = rc::gen::element<char>(' ', 'a', 'b', 'c');
    const auto extra = *rc::gen::container<std::vector<std::string>>(
        rc::gen::container<std::string>(*rc::gen::inRange<size_t>(2, 6), letter));
    const auto extra_scores = *rc::gen::container<std::vector<float>>(extra.size(),
                                                                    rc::gen::element(-1.f, -2.f, -3.f));
    std::set<std::string> seen{" ", "a", "b", "c"};
    std::vector<std::pair<std::string, float>> normal{{" ", -5}, {"a", -5}, {"b", -5}, {"c", -5}};
    for (size_t i = 0; i < extra.size(); ++i)
      if (seen.insert(extra[i]).second) normal.emplace_back(extra[i], extra_scores[i]);
    const Tokenizer tok = llama_layout_vocab(normal);

    const auto text = *rc::gen::container<std::string>(rc::gen::element<char>(' ', 'a', 'b', 'c', 'a', '\n'));
    const bool add_bos = *rc::gen::arbitrary<bool>();
    const auto ids = tok.encode(text, add_bos);
    RC_ASSERT(ids == astrai::test::RunCEncoder(tok).encode(text, add_bos));
    RC_ASSERT(tok.decode(ids) == text);
  });
}

TEST_CASE("encode_with_special_tokens: control pieces in the text become their ids", "[tokenizer]") {
  const Tokenizer tok = merge_rule_vocab();
  // Each run between special pieces is encoded as encode(run, false) would,
  // dummy prefix included (llama.cpp's parse_special after a special token).
  auto concat = [](std::initializer_list<std::vector<int>> parts) {
    std::vector<int> v;
    for (const auto& p : parts) v.insert(v.end(), p.begin(), p.end());
    return v;
  };
  CHECK(tok.encode_with_special_tokens("<s>ab</s>") == concat({{1}, tok.encode("ab", false), {2}}));
  CHECK(tok.encode_with_special_tokens("a<s><s>") == concat({tok.encode("a", false), {1, 1}}));
  CHECK(tok.encode_with_special_tokens("") == std::vector<int>{});
  // <unk> is Unknown, not Control, but llama.cpp's parse_special cuts it out
  // too (tokenizer.json matches it as an added token); a near miss stays text.
  CHECK(tok.encode_with_special_tokens("<unk>") == std::vector<int>{0});
  CHECK(tok.encode_with_special_tokens("<unk") == tok.encode("<unk", false));
  CHECK(tok.encode_with_special_tokens("<s </s") == tok.encode("<s </s", false));
  // Plain encode never parses them (run.c spells "<s>" out).
  CHECK(tok.encode("<s>", false) != std::vector<int>{1});
  rc::prop("encode_with_special_tokens(a + </s> + b) == encode(a) + [eos] + encode(b)", [&] {
    const auto text = rc::gen::container<std::string>(rc::gen::element<char>(' ', 'a', 'b', 'c', 's', '/', '\n'));
    const std::string a = *text, b = *text;  // no '<': no special piece can start inside them
    RC_ASSERT(tok.encode_with_special_tokens(a + "</s>" + b) ==
              concat({tok.encode(a, false), {2}, tok.encode(b, false)}));
  });
}
