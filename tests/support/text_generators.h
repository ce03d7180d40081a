// RapidCheck generators of text, for the text, tokenizer and chat tests:
//  - code points of two kinds: near the edges of UTF-8's length ranges (what
//    the UTF-8 and streaming tests need) or from the scripts real text uses
//    (what the tokenizer tests need to tempt the merges);
//  - valid UTF-8, byte strings that mix it with broken sequences, and any bytes;
//  - random splits into pieces (as tokens split text), and stop sequences likely to occur.
// Encoding is engine/text/utf8's (tests/engine/text/test_utf8.cpp checks it
// against the independent decoder of utf8_oracle.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <rapidcheck.h>

#include "engine/text/utf8.h"

namespace astrai::test {

// A code point of 1, 2, 3 or 4 bytes (never a surrogate), near the edges of
// each length's range often (0x7F/0x80, 0x7FF/0x800, 0xFFFF/0x10000, 0x10FFFF).
inline rc::Gen<uint32_t> gen_code_point_near_edges() {
  return rc::gen::oneOf(rc::gen::inRange<uint32_t>(0x20, 0x7F), rc::gen::inRange<uint32_t>(0, 0x80),
                        rc::gen::inRange<uint32_t>(0x80, 0x800), rc::gen::inRange<uint32_t>(0x800, 0xD800),
                        rc::gen::inRange<uint32_t>(0xE000, 0x10000), rc::gen::inRange<uint32_t>(0x10000, 0x110000),
                        rc::gen::element<uint32_t>(0x7F, 0x80, 0x7FF, 0x800, 0xFFFF, 0x10000, 0x10FFFF, 0xFFFD));
}

// A code point as real text has them: whitespace (space twice as likely),
// printable ASCII, Latin-1, CJK ideographs, 4-byte emoji, or anything outside
// the surrogates.
inline rc::Gen<uint32_t> gen_code_point_of_scripts() {
  return rc::gen::oneOf(rc::gen::element<uint32_t>(' ', ' ', '\t', '\n', '\r'),
                        rc::gen::inRange<uint32_t>(0x21, 0x7F),      // printable ASCII
                        rc::gen::inRange<uint32_t>(0xA0, 0x100),     // Latin-1
                        rc::gen::inRange<uint32_t>(0x4E00, 0xA000),  // CJK ideographs
                        rc::gen::inRange<uint32_t>(0x1F300, 0x1FB00),  // emoji (4 bytes)
                        rc::gen::suchThat(rc::gen::inRange<uint32_t>(0x80, 0x110000),
                                          [](uint32_t cp) { return cp < 0xD800 || cp > 0xDFFF; }));
}

// Valid UTF-8 of code points near the length edges.
inline rc::Gen<std::string> gen_valid_utf8() {
  return rc::gen::map(rc::gen::container<std::vector<uint32_t>>(gen_code_point_near_edges()),
                      [](const std::vector<uint32_t>& cps) {
                        std::string s;
                        for (uint32_t cp : cps) append_utf8(s, cp);
                        return s;
                      });
}

// Valid UTF-8 of script code points and word-like fragments, among them ones
// that look like special pieces ("<s>", "<0x41>") to tempt the merges.
inline rc::Gen<std::string> gen_utf8_text() {
  const auto one = rc::gen::map(gen_code_point_of_scripts(), [](uint32_t cp) { return encode_utf8(cp); });
  auto fragment = rc::gen::oneOf(one, one,
                                 rc::gen::element<std::string>(" the", "Once", " upon", "  ", "ing", "<s>", "</s>",
                                                               "<unk>", "<0x41>", "\n<s>\n", "café", "東京", "😀"));
  return rc::gen::map(rc::gen::container<std::vector<std::string>>(fragment), [](const std::vector<std::string>& parts) {
    std::string text;
    for (const auto& part : parts) text += part;
    return text;
  });
}

// Any bytes at all, including invalid UTF-8 and NUL.
inline rc::Gen<std::string> gen_any_bytes() {
  return rc::gen::map(rc::gen::container<std::vector<uint8_t>>(rc::gen::arbitrary<uint8_t>()),
                      [](const std::vector<uint8_t>& bytes) { return std::string(bytes.begin(), bytes.end()); });
}

// Characters from a small set, so that stop sequences made of them occur often
// (U+FFFD among them: it also appears where invalid bytes are shown).
inline rc::Gen<std::string> gen_small_alphabet_char() {
  return rc::gen::element<std::string>("a", "b", " ", "\xC3\xA9" /* é */, "\xE2\x82\xAC" /* € */,
                                       "\xF0\x9F\x98\x80" /* 😀 */, "\xEF\xBF\xBD" /* U+FFFD, as invalid bytes show */);
}

// Bytes that are mostly small-alphabet text, with arbitrary bytes and
// truncated characters mixed in.
inline rc::Gen<std::string> gen_mixed_bytes() {
  const auto atom = rc::gen::oneOf(gen_small_alphabet_char(), gen_small_alphabet_char(), gen_small_alphabet_char(),
                                   rc::gen::map(rc::gen::inRange(0, 256), [](int b) { return std::string(1, char(b)); }),
                                   rc::gen::element<std::string>("\xC3", "\xE2\x82", "\xF0\x9F\x98", "\xED\xA0\x80",
                                                                 "\xC0\xAF", "\xF4\x90\x80\x80", "\xBF"));
  return rc::gen::map(rc::gen::container<std::vector<std::string>>(atom), [](const std::vector<std::string>& atoms) {
    std::string s;
    for (const auto& a : atoms) s += a;
    return s;
  });
}

// `bytes` cut at random positions into pieces (some may be empty).
inline std::vector<std::string> random_split(const std::string& bytes) {
  auto cuts = *rc::gen::container<std::vector<size_t>>(rc::gen::inRange<size_t>(0, bytes.size() + 1));
  std::sort(cuts.begin(), cuts.end());
  std::vector<std::string> pieces;
  size_t from = 0;
  for (size_t cut : cuts) {
    pieces.push_back(bytes.substr(from, cut - from));
    from = cut;
  }
  pieces.push_back(bytes.substr(from));
  return pieces;
}

// 0 to 3 stop sequences of 1 to 3 small-alphabet characters (valid UTF-8, as API strings are).
inline rc::Gen<std::vector<std::string>> gen_stops() {
  const auto stop = rc::gen::map(rc::gen::container<std::vector<std::string>>(gen_small_alphabet_char()),
                                 [](const std::vector<std::string>& chars) {
                                   std::string s;
                                   for (size_t i = 0; i < chars.size() && i < 3; ++i) s += chars[i];
                                   return s.empty() ? std::string("ab") : s;
                                 });
  return rc::gen::resize(3, rc::gen::container<std::vector<std::string>>(stop));
}

}  // namespace astrai::test
