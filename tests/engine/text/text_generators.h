// RapidCheck generators for the text tests: valid UTF-8 made of characters of
// every length, byte strings that mix it with broken sequences, random splits
// into pieces (as tokens split text), and stop sequences likely to occur.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include <rapidcheck.h>

#include "tests/engine/text/utf8_oracle.h"

namespace astrai::test {

// A code point of 1, 2, 3 or 4 bytes (never a surrogate), near range edges often.
inline rc::Gen<uint32_t> gen_code_point() {
  return rc::gen::oneOf(rc::gen::inRange<uint32_t>(0x20, 0x7F), rc::gen::inRange<uint32_t>(0, 0x80),
                        rc::gen::inRange<uint32_t>(0x80, 0x800), rc::gen::inRange<uint32_t>(0x800, 0xD800),
                        rc::gen::inRange<uint32_t>(0xE000, 0x10000), rc::gen::inRange<uint32_t>(0x10000, 0x110000),
                        rc::gen::element<uint32_t>(0x7F, 0x80, 0x7FF, 0x800, 0xFFFF, 0x10000, 0x10FFFF, 0xFFFD));
}

inline rc::Gen<std::string> gen_valid_utf8() {
  return rc::gen::map(rc::gen::container<std::vector<uint32_t>>(gen_code_point()), [](const std::vector<uint32_t>& cps) {
    std::string s;
    for (uint32_t cp : cps) s += encode_utf8(cp);
    return s;
  });
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
