// GPT-2's bytes_to_unicode() (openai/gpt-2 encoder.py) and its inverse.
#include "engine/tokenizer/byte_level.h"

#include <array>

namespace astrai {

namespace {

struct Alphabet {
  std::array<char32_t, 256> char_of_byte{};
  std::array<int16_t, 324> byte_of_char{};  // every code point used is below U+0144; -1: none
};

const Alphabet& alphabet() {
  static const Alphabet a = [] {
    Alphabet t;
    t.byte_of_char.fill(-1);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      t.char_of_byte[size_t(b)] = printable ? char32_t(b) : next++;
      t.byte_of_char[t.char_of_byte[size_t(b)]] = int16_t(b);
    }
    return t;
  }();
  return a;
}

}  // namespace

char32_t byte_level_char(uint8_t byte) { return alphabet().char_of_byte[byte]; }

std::string byte_level_encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) {
    const char32_t cp = byte_level_char(uint8_t(c));
    if (cp < 0x80) {
      out += char(cp);
    } else {  // all below U+0800: two UTF-8 bytes
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    }
  }
  return out;
}

std::optional<std::string> byte_level_decode(std::string_view piece) {
  const Alphabet& a = alphabet();
  std::string out;
  out.reserve(piece.size());
  for (size_t i = 0; i < piece.size();) {
    const auto c0 = uint8_t(piece[i]);
    char32_t cp;
    if (c0 < 0x80) {
      cp = c0;
      i += 1;
    } else if ((c0 & 0xE0) == 0xC0 && i + 1 < piece.size() && (uint8_t(piece[i + 1]) & 0xC0) == 0x80) {
      cp = char32_t(c0 & 0x1F) << 6 | char32_t(uint8_t(piece[i + 1]) & 0x3F);
      i += 2;
    } else {
      return std::nullopt;  // three- and four-byte code points are outside the alphabet
    }
    if (cp >= a.byte_of_char.size() || a.byte_of_char[cp] < 0) return std::nullopt;
    out += char(a.byte_of_char[cp]);
  }
  return out;
}

}  // namespace astrai
