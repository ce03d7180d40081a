#include "engine/text/utf8.h"

namespace astrai {
namespace {

// Number of bytes of the character a lead byte starts, or 0 if it is not a lead byte.
size_t sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;  // continuation byte, or a lead byte that no valid UTF-8 uses
}

bool is_continuation(unsigned char b) { return (b & 0xC0) == 0x80; }

// Whether s[i .. i+n) is a well-formed character: continuation bytes, and the
// second-byte ranges that exclude overlong forms, surrogates and > U+10FFFF.
bool valid_sequence(std::string_view s, size_t i, size_t n) {
  const auto lead = static_cast<unsigned char>(s[i]);
  for (size_t k = 1; k < n; ++k)
    if (!is_continuation(static_cast<unsigned char>(s[i + k]))) return false;
  if (n < 2) return true;
  const auto second = static_cast<unsigned char>(s[i + 1]);
  if (lead == 0xE0 && second < 0xA0) return false;  // overlong
  if (lead == 0xED && second > 0x9F) return false;  // surrogates
  if (lead == 0xF0 && second < 0x90) return false;  // overlong
  if (lead == 0xF4 && second > 0x8F) return false;  // past U+10FFFF
  return true;
}

}  // namespace

void append_utf8(std::string& out, char32_t cp) {
  if (cp >= 0xD800 && (cp <= 0xDFFF || cp > 0x10FFFF)) cp = kReplacementCharacter;
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {  // 110xxxxx 10xxxxxx
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {  // 1110xxxx 10xxxxxx 10xxxxxx
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {  // 11110xxx 10xxxxxx 10xxxxxx 10xxxxxx
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

std::string encode_utf8(char32_t cp) {
  std::string out;
  append_utf8(out, cp);
  return out;
}

std::string encode_utf8(std::u32string_view code_points) {
  std::string out;
  out.reserve(code_points.size());
  for (const char32_t cp : code_points) append_utf8(out, cp);
  return out;
}

std::optional<Utf8Char> decode_utf8_at(std::string_view s, size_t i) {
  const auto lead = static_cast<unsigned char>(s[i]);
  const size_t n = sequence_length(lead);
  if (n == 0 || i + n > s.size() || !valid_sequence(s, i, n)) return std::nullopt;
  // The lead byte's payload bits (7, 5, 4 or 3), then 6 bits per continuation byte.
  constexpr unsigned char kPayload[] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  char32_t cp = lead & kPayload[n];
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return Utf8Char{cp, n};
}

std::u32string decode_utf8(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (const auto c = decode_utf8_at(s, i)) {
      out += c->code_point;
      i += c->length;
    } else {
      out += kReplacementCharacter;
      ++i;
    }
  }
  return out;
}

size_t incomplete_utf8_tail(std::string_view s) {
  // A character is at most 4 bytes, so only the last 3 bytes can be an unfinished one.
  for (size_t back = 1; back <= 3 && back <= s.size(); ++back) {
    const size_t i = s.size() - back;
    const auto b = static_cast<unsigned char>(s[i]);
    if (is_continuation(b)) continue;
    const size_t n = sequence_length(b);
    if (n > back && valid_sequence(s, i, back)) return back;
    return 0;
  }
  return 0;
}

std::string sanitize_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const size_t n = sequence_length(static_cast<unsigned char>(s[i]));
    if (n != 0 && i + n <= s.size() && valid_sequence(s, i, n)) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER for one bad byte
      ++i;
    }
  }
  return out;
}

}  // namespace astrai
