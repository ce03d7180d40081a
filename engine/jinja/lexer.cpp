// jinja2's lexer, for the settings of Hugging Face chat templates (see lexer.h).
#include "engine/jinja/lexer.h"

#include <cstdlib>
#include <cstring>

#include "engine/jinja/error.h"
#include "engine/jinja/python_text.h"

namespace astrai::jinja {

namespace {

// The code point at s[pos] and its byte length (invalid bytes: U+FFFD, 1 byte).
std::pair<char32_t, size_t> code_point_at(std::string_view s, size_t pos) {
  const size_t len = (uint8_t(s[pos]) & 0x80) == 0 ? 1 : (uint8_t(s[pos]) >> 5) == 6 ? 2 : (uint8_t(s[pos]) >> 4) == 14 ? 3 : 4;
  const std::u32string u = decode_utf8(s.substr(pos, std::min(len, s.size() - pos)));
  return {u.empty() ? U'\uFFFD' : u[0], u.size() == 1 ? std::min(len, s.size() - pos) : 1};
}

// Python's \s*: advances over whitespace code points.
size_t skip_whitespace(std::string_view s, size_t pos) {
  while (pos < s.size()) {
    const auto [c, n] = code_point_at(s, pos);
    if (!py_isspace(c)) break;
    pos += n;
  }
  return pos;
}

int count_newlines(std::string_view s) {
  int n = 0;
  for (const char c : s) n += c == '\n';
  return n;
}

// Python's unicode-escape decoding of a string literal's body.
std::string decode_string(std::string_view body, int line) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 == body.size()) {
      out += body[i];
      continue;
    }
    const char e = body[++i];
    auto hex_escape = [&](int digits) {
      char32_t cp = 0;
      for (int k = 1; k <= digits; ++k) {
        const char h = i + size_t(k) < body.size() ? body[i + size_t(k)] : 'g';
        const int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
        if (d < 0) throw TemplateError("truncated \\" + std::string(1, e) + " escape in a string literal", line);
        cp = cp * 16 + char32_t(d);
      }
      i += size_t(digits);
      if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        throw TemplateError("string literal escape names no Unicode scalar value", line);
      out += encode_utf8(cp);
    };
    switch (e) {
      case '\n': break;  // line continuation
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'v': out += '\v'; break;
      case 'x': hex_escape(2); break;
      case 'u': hex_escape(4); break;
      case 'U': hex_escape(8); break;
      case 'N': throw TemplateError("\\N{...} escapes in string literals are not supported", line);
      default:
        if (e >= '0' && e <= '7') {  // up to three octal digits
          int v = e - '0';
          for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7'; ++k)
            v = v * 8 + (body[++i] - '0');
          out += encode_utf8(char32_t(v));
        } else {  // unknown escapes stay as written
          out += '\\';
          out += e;
        }
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string source) : s_(std::move(source)) {}

  std::vector<Token> run() {
    bool line_starting = true;  // the previous match ended with a newline (or this is the start)
    while (pos_ < s_.size()) {
      const size_t tag = find_tag(pos_);
      std::string text = s_.substr(pos_, tag - pos_);
      if (tag == s_.size()) {
        emit_text(text);
        pos_ = tag;
        break;
      }
      const char kind = s_[tag + 1];  // '{', '%' or '#'
      const char sign = tag + 2 < s_.size() && (s_[tag + 2] == '-' || s_[tag + 2] == '+') ? s_[tag + 2] : 0;
      if (sign == '-') {
        text = py_strip(text, std::nullopt, false, true);
      } else if (sign != '+' && kind != '{') {  // lstrip_blocks
        const size_t nl = text.rfind('\n');
        const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
        if ((l_pos > 0 || line_starting) && l_pos < text.size() && skip_whitespace(text, l_pos) == text.size())
          text.resize(l_pos);
      }
      emit_text(text);
      line_ += count_newlines(s_.substr(pos_, tag - pos_));
      pos_ = tag + 2 + (sign ? 1 : 0);
      if (kind == '#') {
        line_starting = comment();
      } else if (kind == '%' && raw_block()) {
        line_starting = ends_with_newline_;
      } else {
        line_starting = tag_body(kind == '%');
      }
    }
    tokens_.push_back({TokenType::End, "", line_});
    return std::move(tokens_);
  }

 private:
  // The first "{{", "{%" or "{#" at or after pos, or the end.
  size_t find_tag(size_t pos) const {
    for (size_t i = pos; i + 1 < s_.size(); ++i)
      if (s_[i] == '{' && (s_[i + 1] == '{' || s_[i + 1] == '%' || s_[i + 1] == '#')) return i;
    return s_.size();
  }

  void emit_text(const std::string& text) {
    if (!text.empty()) tokens_.push_back({TokenType::Text, text, line_});
  }

  // After "{#": skips to "#}" and applies its whitespace control. Returns
  // whether the consumed end ends with a newline.
  bool comment() {
    const size_t end = s_.find("#}", pos_);
    if (end == std::string::npos) throw TemplateError("missing end of comment tag", line_);
    const char sign = end > pos_ && (s_[end - 1] == '-' || s_[end - 1] == '+') ? s_[end - 1] : 0;
    line_ += count_newlines(s_.substr(pos_, end - pos_));
    pos_ = end + 2;
    return after_end(sign, true);
  }

  // Applies an end delimiter's whitespace control at pos_: "-" eats all
  // whitespace, trim_blocks (blocks and comments, unless "+") one newline.
  bool after_end(char sign, bool trim_blocks) {
    const size_t from = pos_;
    if (sign == '-') pos_ = skip_whitespace(s_, pos_);
    else if (sign != '+' && trim_blocks && pos_ < s_.size() && s_[pos_] == '\n') ++pos_;
    line_ += count_newlines(s_.substr(from, pos_ - from));
    if (pos_ > from) return s_[pos_ - 1] == '\n';
    return false;  // the match ended with the delimiter itself
  }

  // {% raw %} ... {% endraw %}: when the block at `tag` is a raw block, emits
  // its content as text and returns true.
  bool raw_block() {
    size_t p = skip_whitespace(s_, pos_);
    if (s_.compare(p, 3, "raw") != 0) return false;
    p = skip_whitespace(s_, p + 3);
    char sign = 0;
    if (p < s_.size() && s_[p] == '-') sign = s_[p++];
    if (s_.compare(p, 2, "%}") != 0) return false;
    pos_ = p + 2;
    if (sign == '-') pos_ = skip_whitespace(s_, pos_);
    // The end: {%[-+]? endraw [-+]?%}
    for (size_t q = s_.find("{%", pos_); q != std::string::npos; q = s_.find("{%", q + 2)) {
      size_t r = q + 2;
      const char begin_sign = r < s_.size() && (s_[r] == '-' || s_[r] == '+') ? s_[r++] : 0;
      r = skip_whitespace(s_, r);
      if (s_.compare(r, 6, "endraw") != 0) continue;
      r = skip_whitespace(s_, r + 6);
      const char end_sign = r < s_.size() && (s_[r] == '-' || s_[r] == '+') ? s_[r++] : 0;
      if (s_.compare(r, 2, "%}") != 0) continue;
      std::string body = s_.substr(pos_, q - pos_);
      if (begin_sign == '-') body = py_strip(body, std::nullopt, false, true);
      emit_text(body);
      line_ += count_newlines(s_.substr(pos_, r + 2 - pos_));
      pos_ = r + 2;
      ends_with_newline_ = after_end(end_sign, true);
      return true;
    }
    throw TemplateError("missing end of raw directive", line_);
  }

  // After "{{" or "{%": the tokens up to the matching end delimiter.
  bool tag_body(bool block) {
    tokens_.push_back({block ? TokenType::BlockBegin : TokenType::VariableBegin, "", line_});
    const int start_line = line_;
    std::vector<char> balance;
    while (true) {
      if (pos_ >= s_.size())
        throw TemplateError(std::string("unexpected end of template: missing ") + (block ? "'%}'" : "'}}'"), start_line);
      if (balance.empty()) {
        const char* end = block ? "%}" : "}}";
        char sign = 0;
        size_t at = pos_;
        if ((s_[at] == '-' || (block && s_[at] == '+')) && s_.compare(at + 1, 2, end) == 0) sign = s_[at++];
        if (s_.compare(at, 2, end) == 0) {
          pos_ = at + 2;
          tokens_.push_back({block ? TokenType::BlockEnd : TokenType::VariableEnd, "", line_});
          return after_end(sign, block);
        }
      }
      const auto [c, n] = code_point_at(s_, pos_);
      if (py_isspace(c)) {
        line_ += c == '\n';
        pos_ += n;
        continue;
      }
      if (c == '\'' || c == '"') {
        string_literal(char(c));
      } else if (c >= '0' && c <= '9') {
        number();
      } else if (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
        size_t e = pos_;
        while (e < s_.size() && (s_[e] == '_' || std::isalnum(uint8_t(s_[e])))) ++e;
        tokens_.push_back({TokenType::Name, s_.substr(pos_, e - pos_), line_});
        pos_ = e;
      } else {
        operator_token(balance);
      }
    }
  }

  void string_literal(char quote) {
    size_t e = pos_ + 1;
    while (e < s_.size() && s_[e] != quote) e += s_[e] == '\\' ? 2 : 1;
    if (e >= s_.size()) throw TemplateError("unterminated string literal", line_);
    tokens_.push_back({TokenType::String, decode_string(std::string_view(s_).substr(pos_ + 1, e - pos_ - 1), line_), line_});
    line_ += count_newlines(std::string_view(s_).substr(pos_, e - pos_));
    pos_ = e + 1;
  }

  void number() {
    size_t e = pos_;
    while (e < s_.size() && std::isdigit(uint8_t(s_[e]))) ++e;
    const bool after_dot = pos_ > 0 && s_[pos_ - 1] == '.';  // foo.0 is an attribute, never a float
    bool is_float = false;
    if (!after_dot && e + 1 < s_.size() && s_[e] == '.' && std::isdigit(uint8_t(s_[e + 1]))) {
      is_float = true;
      for (++e; e < s_.size() && std::isdigit(uint8_t(s_[e]));) ++e;
    }
    if (!after_dot && e < s_.size() && (s_[e] == 'e' || s_[e] == 'E')) {
      size_t x = e + 1;
      if (x < s_.size() && (s_[x] == '+' || s_[x] == '-')) ++x;
      if (x < s_.size() && std::isdigit(uint8_t(s_[x]))) {
        is_float = true;
        for (e = x; e < s_.size() && std::isdigit(uint8_t(s_[e]));) ++e;
      }
    }
    if (e < s_.size() && (s_[e] == '_' || std::isalpha(uint8_t(s_[e]))))
      throw TemplateError("unsupported number literal '" + s_.substr(pos_, e + 1 - pos_) + "' (only decimal)", line_);
    Token t{is_float ? TokenType::Float : TokenType::Integer, s_.substr(pos_, e - pos_), line_};
    if (is_float) {
      // Digits, a point and an exponent: strtod reads it all, rounding
      // beyond double's range to inf or 0.0 as jinja2's float() does.
      t.float_value = std::strtod(t.value.c_str(), nullptr);
    } else {
      if (t.value.size() > 1 && t.value[0] == '0' && t.value.find_first_not_of('0') != std::string::npos)
        throw TemplateError("invalid integer literal '" + t.value + "'", line_);
      try {
        t.int_value = std::stoll(t.value);
      } catch (const std::out_of_range&) {
        throw TemplateError("integer literal " + t.value + " is out of the supported 64-bit range", line_);
      }
    }
    tokens_.push_back(std::move(t));
    pos_ = e;
  }

  void operator_token(std::vector<char>& balance) {
    static const char* two[] = {"//", "**", "==", "!=", ">=", "<="};
    for (const char* op : two) {
      if (s_.compare(pos_, 2, op) == 0) {
        tokens_.push_back({TokenType::Operator, op, line_});
        pos_ += 2;
        return;
      }
    }
    const char c = s_[pos_];
    if (!std::strchr("+-/*%~[](){}><=.:|,;", c) || c == 0)
      throw TemplateError("unexpected character '" + std::string(1, c) + "' in a tag", line_);
    if (c == '(' || c == '[' || c == '{') balance.push_back(c);
    if (c == ')' || c == ']' || c == '}') {
      const char open = c == ')' ? '(' : c == ']' ? '[' : '{';
      if (balance.empty() || balance.back() != open)
        throw TemplateError("unexpected '" + std::string(1, c) + "'", line_);
      balance.pop_back();
    }
    tokens_.push_back({TokenType::Operator, std::string(1, c), line_});
    ++pos_;
  }

  std::string s_;
  size_t pos_ = 0;
  int line_ = 1;
  bool ends_with_newline_ = false;
  std::vector<Token> tokens_;
};

// jinja2 reads the source with its newlines normalized and (without
// keep_trailing_newline) one trailing newline removed.
std::string normalize_source(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(normalize_source(source)).run(); }

}  // namespace astrai::jinja
