// Python str semantics on UTF-8 (see python_text.h). Case mappings come from
// ICU (root locale, full mappings as Python's str.upper/lower use).
#include "engine/jinja/python_text.h"

#include "engine/jinja/render_limits.h"
#include <unicode/locid.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <charconv>
#include <cstdlib>
#include <cmath>
#include <stdexcept>

namespace astrai::jinja {

// CPython's _PyUnicode_IsWhitespace: bidirectional types WS, B, S and category Zs.
bool py_isspace(char32_t c) {
  switch (c) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x1C: case 0x1D: case 0x1E: case 0x1F:
    case 0x20: case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F:
    case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
  const std::u32string u = decode_utf8(s);
  const std::u32string set = chars ? decode_utf8(*chars) : std::u32string();
  auto strip_it = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : py_isspace(c); };
  size_t begin = 0, end = u.size();
  if (left)
    while (begin < end && strip_it(u[begin])) ++begin;
  if (right)
    while (end > begin && strip_it(u[end - 1])) --end;
  return encode_utf8(std::u32string_view(u).substr(begin, end - begin));
}

std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    if (sep->empty()) throw std::invalid_argument("empty separator");
    size_t pos = 0;
    while (maxsplit < 0 || int64_t(out.size()) < maxsplit) {
      const size_t hit = s.find(*sep, pos);
      if (hit == std::string_view::npos) break;
      out.emplace_back(s.substr(pos, hit - pos));
      pos = hit + sep->size();
    }
    out.emplace_back(s.substr(pos));
    return out;
  }
  // Whitespace runs separate; leading and trailing whitespace gives no empty parts.
  const std::u32string u = decode_utf8(s);
  size_t i = 0;
  while (true) {
    while (i < u.size() && py_isspace(u[i])) ++i;
    if (i == u.size()) break;
    if (maxsplit >= 0 && int64_t(out.size()) == maxsplit) {
      // The rest, with its trailing whitespace removed, is the last part.
      size_t end = u.size();
      while (end > i && py_isspace(u[end - 1])) --end;
      out.push_back(encode_utf8(std::u32string_view(u).substr(i, end - i)));
      break;
    }
    size_t j = i;
    while (j < u.size() && !py_isspace(u[j])) ++j;
    out.push_back(encode_utf8(std::u32string_view(u).substr(i, j - i)));
    i = j;
  }
  return out;
}

std::string py_replace(std::string_view s, std::string_view old, std::string_view replacement, int64_t count) {
  std::string out;
  if (old.empty()) {
    // Python inserts the replacement between every code point (and at both ends).
    const std::u32string u = decode_utf8(s);
    int64_t done = 0;
    for (size_t i = 0; i <= u.size(); ++i) {
      if (count < 0 || done < count) {
        check_string_size(out.size() + replacement.size());
        out += replacement;
        ++done;
      }
      if (i < u.size()) out += encode_utf8(u[i]);
    }
    return out;
  }
  size_t pos = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t hit = s.find(old, pos);
    if (hit == std::string_view::npos) break;
    check_string_size(out.size() + (hit - pos) + replacement.size());
    out += s.substr(pos, hit - pos);
    out += replacement;
    pos = hit + old.size();
    ++done;
  }
  out += s.substr(pos);
  return out;
}

namespace {

std::string icu_case(std::string_view s, bool upper) {
  bool ascii = true;
  for (const char c : s) ascii = ascii && uint8_t(c) < 0x80;
  if (ascii) {
    std::string out(s);
    for (char& c : out) {
      if (upper && c >= 'a' && c <= 'z') c = char(c - 32);
      if (!upper && c >= 'A' && c <= 'Z') c = char(c + 32);
    }
    return out;
  }
  icu::UnicodeString u = icu::UnicodeString::fromUTF8(icu::StringPiece(s.data(), int32_t(s.size())));
  if (upper) u.toUpper(icu::Locale::getRoot());
  else u.toLower(icu::Locale::getRoot());
  std::string out;
  u.toUTF8String(out);
  return out;
}

std::string one(char32_t c) { return encode_utf8(c); }

// The full title-case mapping of one code point (Python's _PyUnicode_ToTitleFull):
// 'ß' -> "Ss", 'ﬁ' -> "Fi".
std::string title_full(char32_t c) {
  if (c < 0x80) return one(c >= 'a' && c <= 'z' ? c - 32 : c);
  icu::UnicodeString u{UChar32(c)};
  u.toTitle(nullptr, icu::Locale::getRoot(), U_TITLECASE_NO_LOWERCASE | U_TITLECASE_NO_BREAK_ADJUSTMENT);
  std::string out;
  u.toUTF8String(out);
  return out;
}

}  // namespace

std::string py_upper(std::string_view s) { return icu_case(s, true); }
std::string py_lower(std::string_view s) { return icu_case(s, false); }

std::string py_capitalize(std::string_view s) {
  const std::u32string u = decode_utf8(s);
  if (u.empty()) return "";
  return title_full(u[0]) + py_lower(encode_utf8(std::u32string_view(u).substr(1)));
}

std::string py_str_title(std::string_view s) {
  std::string out;
  bool previous_is_cased = false;
  for (const char32_t c : decode_utf8(s)) {
    out += previous_is_cased ? py_lower(one(c)) : title_full(c);
    previous_is_cased = u_hasBinaryProperty(UChar32(c), UCHAR_CASED);
  }
  return out;
}

std::string jinja_title(std::string_view s) {
  // re.split(r"([-\s\(\{\[\<]+)", s): words and the separator runs between them;
  // each non-empty piece becomes piece[0].upper() + piece[1:].lower().
  const std::u32string u = decode_utf8(s);
  auto is_sep = [](char32_t c) { return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || py_isspace(c); };
  std::string out;
  for (size_t i = 0; i < u.size();) {
    const bool sep = is_sep(u[i]);
    size_t j = i;
    while (j < u.size() && is_sep(u[j]) == sep) ++j;
    out += py_upper(one(u[i])) + py_lower(encode_utf8(std::u32string_view(u).substr(i + 1, j - i - 1)));
    i = j;
  }
  return out;
}

int64_t py_len(std::string_view s) {
  int64_t n = 0;
  for (const char c : s) n += (uint8_t(c) & 0xC0) != 0x80;
  return n;
}

std::vector<int64_t> slice_indices(int64_t n, std::optional<int64_t> start, std::optional<int64_t> stop,
                                   std::optional<int64_t> step) {
  const int64_t st = step.value_or(1);
  if (st == 0) throw std::invalid_argument("slice step cannot be zero");
  auto adjust = [&](std::optional<int64_t> v, int64_t fallback) {
    if (!v) return fallback;
    int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < 0) x = st < 0 ? -1 : 0;
    } else if (x >= n) {
      x = st < 0 ? n - 1 : n;
    }
    return x;
  };
  const int64_t b = adjust(start, st < 0 ? n - 1 : 0);
  const int64_t e = adjust(stop, st < 0 ? -1 : n);
  std::vector<int64_t> out;
  for (int64_t i = b; st > 0 ? i < e : i > e; i += st) out.push_back(i);
  return out;
}

std::string py_slice(std::string_view s, std::optional<int64_t> start, std::optional<int64_t> stop,
                     std::optional<int64_t> step) {
  const std::u32string u = decode_utf8(s);
  std::u32string out;
  for (const int64_t i : slice_indices(int64_t(u.size()), start, stop, step)) out += u[size_t(i)];
  return encode_utf8(out);
}

std::optional<double> py_parse_float(std::string_view s) {
  if (s.empty() || s.find_first_of("xXpP(") != std::string_view::npos) return std::nullopt;
  const std::string text(s);  // strtod needs a terminated string
  char* end = nullptr;
  const double d = std::strtod(text.c_str(), &end);  // overflow: +-HUGE_VAL (inf); underflow: 0 or subnormal
  if (end != text.c_str() + text.size()) return std::nullopt;
  return d;
}

std::string py_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  // Shortest round-trip digits (what Python's repr uses), then Python's layout:
  // fixed notation when -4 < decpt <= 16, else d.ddde+XX.
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, std::fabs(d), std::chars_format::scientific);
  const std::string sci(buf, r.ptr);
  const size_t e = sci.find('e');
  std::string digits = sci.substr(0, 1) + (e > 2 ? sci.substr(2, e - 2) : "");
  const int exp10 = std::stoi(sci.substr(e + 1));
  const int decpt = exp10 + 1;
  std::string out = std::signbit(d) ? "-" : "";
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0." + std::string(size_t(-decpt), '0') + digits;
    } else if (size_t(decpt) >= digits.size()) {
      out += digits + std::string(size_t(decpt) - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, size_t(decpt)) + "." + digits.substr(size_t(decpt));
    }
  } else {
    out += digits.substr(0, 1);
    if (digits.size() > 1) {
      out += '.';
      out += digits.substr(1);
    }
    const int a = exp10 < 0 ? -exp10 : exp10;
    out += std::string("e") + (exp10 < 0 ? "-" : "+") + (a < 10 ? "0" : "") + std::to_string(a);
  }
  return out;
}

namespace {

// Py_UNICODE_ISPRINTABLE: everything but categories Cc, Cf, Cs, Co, Cn, Zl, Zp
// and Zs other than the space.
bool py_isprintable(char32_t c) {
  if (c == ' ') return true;
  switch (u_charType(UChar32(c))) {
    case U_CONTROL_CHAR: case U_FORMAT_CHAR: case U_SURROGATE: case U_PRIVATE_USE_CHAR: case U_UNASSIGNED:
    case U_LINE_SEPARATOR: case U_PARAGRAPH_SEPARATOR: case U_SPACE_SEPARATOR:
      return false;
    default:
      return true;
  }
}

}  // namespace

std::string py_string_repr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  static const char* hex = "0123456789abcdef";
  for (const char32_t c : decode_utf8(s)) {
    if (c == char32_t(quote) || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7F) {
      out += std::string("\\x") + hex[c >> 4] + hex[c & 15];
    } else if (c < 0x80 || py_isprintable(c)) {
      out += one(c);
    } else if (c <= 0xFF) {
      out += std::string("\\x") + hex[c >> 4] + hex[c & 15];
    } else if (c <= 0xFFFF) {
      out += std::string("\\u") + hex[c >> 12] + hex[(c >> 8) & 15] + hex[(c >> 4) & 15] + hex[c & 15];
    } else {
      out += "\\U";
      for (int shift = 28; shift >= 0; shift -= 4) out += hex[(c >> shift) & 15];
    }
  }
  out += quote;
  return out;
}

}  // namespace astrai::jinja
