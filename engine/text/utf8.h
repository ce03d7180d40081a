// UTF-8 for the whole program: the one encoder and decoder the engine, the
// Jinja library and the tests use, and the few facts streaming text needs.
// Invalid input has one policy everywhere: every byte that does not start a
// well-formed character stands for one U+FFFD (as sanitize_utf8 shows it).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace astrai {

inline constexpr char32_t kReplacementCharacter = U'\uFFFD';

// ---- encoding ----

// Appends cp's UTF-8 bytes (1 to 4) to out. A value that is no Unicode scalar
// value (a surrogate U+D800..U+DFFF, or past U+10FFFF) has no UTF-8 form:
// U+FFFD is appended instead, so the output is always valid.
void append_utf8(std::string& out, char32_t cp);
std::string encode_utf8(char32_t cp);
std::string encode_utf8(std::u32string_view code_points);

// ---- decoding ----

struct Utf8Char {
  char32_t code_point = 0;
  size_t length = 0;  // bytes, 1 to 4
};

// The well-formed character starting at s[i] (i < s.size()), or nullopt when
// none starts there: a continuation or unused lead byte, a missing
// continuation byte, an overlong form, a surrogate or a value past U+10FFFF.
std::optional<Utf8Char> decode_utf8_at(std::string_view s, size_t i);

// The code points of s, each byte that starts no well-formed character
// decoded as one U+FFFD (so encode_utf8(decode_utf8(s)) == sanitize_utf8(s)).
std::u32string decode_utf8(std::string_view s);

// ---- streaming ----

// Length of the trailing bytes of s that begin a multi-byte character but do
// not complete it yet (0 when s ends on a character boundary). Bytes that can
// never become valid UTF-8 are not counted: they are not worth waiting for.
size_t incomplete_utf8_tail(std::string_view s);

// s with every invalid UTF-8 sequence replaced by U+FFFD, so that the result
// is always valid (JSON encoders require it; a model may emit any bytes).
std::string sanitize_utf8(std::string_view s);

}  // namespace astrai
