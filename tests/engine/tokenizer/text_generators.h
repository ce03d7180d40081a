// RapidCheck generators of text for the tokenizer properties: valid UTF-8
// drawn from several code point ranges (ASCII with whitespace, Latin-1, CJK,
// 4-byte emoji, anything outside the surrogates), mixed with fragments that
// look like special pieces ("<s>", "<0x41>") to tempt the merges.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <rapidcheck.h>

namespace astrai::test {

// UTF-8 encoding of one code point (not a surrogate, at most U+10FFFF).
inline std::string utf8(uint32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
  return out;
}

inline rc::Gen<uint32_t> gen_code_point() {
  return rc::gen::oneOf(rc::gen::element<uint32_t>(' ', ' ', '\t', '\n', '\r'),  // whitespace, space twice as likely
                        rc::gen::inRange<uint32_t>(0x21, 0x7F),                     // printable ASCII
                        rc::gen::inRange<uint32_t>(0xA0, 0x100),                    // Latin-1
                        rc::gen::inRange<uint32_t>(0x4E00, 0xA000),                 // CJK ideographs
                        rc::gen::inRange<uint32_t>(0x1F300, 0x1FB00),               // emoji (4 bytes)
                        rc::gen::suchThat(rc::gen::inRange<uint32_t>(0x80, 0x110000),
                                          [](uint32_t cp) { return cp < 0xD800 || cp > 0xDFFF; }));
}

// A valid UTF-8 string of code points and word-like fragments.
inline rc::Gen<std::string> gen_utf8_text() {
  auto fragment = rc::gen::oneOf(
      rc::gen::map(gen_code_point(), utf8), rc::gen::map(gen_code_point(), utf8),
      rc::gen::element<std::string>(" the", "Once", " upon", "  ", "ing", "<s>", "</s>", "<unk>", "<0x41>",
                                    "\n<s>\n", "café", "東京", "😀"));
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

}  // namespace astrai::test
