// GPT-2's bytes_to_unicode() (openai/gpt-2 encoder.py) and its inverse.
#include "engine/tokenizer/byte_level.h"

#include <array>

#include "engine/text/utf8.h"

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
    append_utf8(out, byte_level_char(uint8_t(c)));  // all below U+0800: one or two bytes
  }
  return out;
}

std::optional<std::string> byte_level_decode(std::string_view piece) {
  const Alphabet& a = alphabet();
  std::string out;
  out.reserve(piece.size());
  for (size_t i = 0; i < piece.size();) {
    // Invalid UTF-8 spells no character; three- and four-byte ones are outside the alphabet.
    const auto c = decode_utf8_at(piece, i);
    if (!c) return std::nullopt;
    const char32_t cp = c->code_point;
    i += c->length;
    if (cp >= a.byte_of_char.size() || a.byte_of_char[cp] < 0) return std::nullopt;
    out += char(a.byte_of_char[cp]);
  }
  return out;
}

}  // namespace astrai
