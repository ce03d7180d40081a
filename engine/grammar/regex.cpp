#include "engine/grammar/regex.h"

#include "engine/grammar/token_constraint.h"
#include "engine/grammar/utf8_ranges.h"
#include "engine/text/utf8.h"

namespace astrai::grammar {

namespace {

constexpr int kMaxCount = 1000;
constexpr int kMaxDepth = 100;

const std::vector<CodeRange> kDigit{{'0', '9'}};
const std::vector<CodeRange> kWord{{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const std::vector<CodeRange> kRegexSpaceClass{{'\t', '\r'}, {' ', ' '}};

class RegexParser {
 public:
  RegexParser(std::string_view p, const std::string& keyword, const std::string& pointer)
      : p_(p), keyword_(keyword), pointer_(pointer) {}

  CompiledRegex parse() {
    CompiledRegex out;
    if (peek('^')) {
      ++i_;
      out.anchored_start = true;
    }
    out.expr = alternation(0);
    if (i_ < p_.size() && p_[i_] == '$' && i_ + 1 == p_.size()) {
      ++i_;
      out.anchored_end = true;
    }
    if (i_ < p_.size()) fail(p_[i_] == ')' ? "unbalanced ')'" : "unsupported '" + std::string(1, p_[i_]) + "'");
    return out;
  }

 private:
  std::string_view p_;
  const std::string& keyword_;
  const std::string& pointer_;
  size_t i_ = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw ConstraintError(keyword_, pointer_,
                          "regex at offset " + std::to_string(i_) + ": " + what + " (docs/structured-outputs.md lists the subset)");
  }
  bool peek(char c) const { return i_ < p_.size() && p_[i_] == c; }
  bool at_end_anchor() const { return peek('$') && i_ + 1 == p_.size(); }

  Expr alternation(int depth) {
    if (depth > kMaxDepth) fail("groups nested too deeply");
    std::vector<Expr> alts{sequence(depth)};
    while (peek('|')) {
      ++i_;
      alts.push_back(sequence(depth));
    }
    return alts.size() == 1 ? std::move(alts[0]) : alt(std::move(alts));
  }

  Expr sequence(int depth) {
    std::vector<Expr> items;
    while (i_ < p_.size() && !peek('|') && !peek(')') && !at_end_anchor()) items.push_back(quantified(depth));
    return items.size() == 1 ? std::move(items[0]) : seq(std::move(items));
  }

  int number() {
    if (i_ >= p_.size() || !isdigit(uint8_t(p_[i_]))) fail("a number expected in {m,n}");
    long v = 0;
    while (i_ < p_.size() && isdigit(uint8_t(p_[i_]))) {
      v = v * 10 + (p_[i_++] - '0');
      if (v > kMaxCount) fail("a repeat count above " + std::to_string(kMaxCount));
    }
    return int(v);
  }

  Expr quantified(int depth) {
    Expr e = atom(depth);
    while (i_ < p_.size()) {
      int lo, hi;
      const char c = p_[i_];
      if (c == '*' || c == '+' || c == '?') {
        ++i_;
        lo = c == '+' ? 1 : 0;
        hi = c == '?' ? 1 : Expr::kUnbounded;
      } else if (c == '{') {
        ++i_;
        lo = hi = number();
        if (peek(',')) {
          ++i_;
          hi = peek('}') ? Expr::kUnbounded : number();
        }
        if (!peek('}')) fail("'}' expected");
        ++i_;
        if (hi != Expr::kUnbounded && hi < lo) fail("{m,n} with n < m");
      } else {
        break;
      }
      if (peek('?')) ++i_;  // lazy: the same language under full match
      if (peek('+')) fail("possessive quantifiers are not supported");
      e = repeat(std::move(e), lo, hi);
    }
    return e;
  }

  uint32_t utf8_char() {  // the code point at i_ (the pattern is UTF-8)
    const uint8_t b = uint8_t(p_[i_]);
    const int n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    if (n == 0 || i_ + size_t(n) > p_.size()) fail("invalid UTF-8");
    uint32_t cp = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
    for (int k = 1; k < n; ++k) {
      const uint8_t c = uint8_t(p_[i_ + size_t(k)]);
      if ((c >> 6) != 2) fail("invalid UTF-8");
      cp = (cp << 6) | (c & 0x3F);
    }
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) || encode_utf8(char32_t(cp)).size() != size_t(n)) fail("invalid UTF-8");
    i_ += size_t(n);
    return cp;
  }

  uint32_t hex_digits(size_t count, bool braced) {
    uint32_t v = 0;
    size_t k = 0;
    for (; i_ < p_.size() && (braced ? p_[i_] != '}' : k < count); ++k, ++i_) {
      const char c = p_[i_];
      const int d = isdigit(uint8_t(c)) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
      if (d < 0 || k >= 6) fail("bad hex escape");
      v = v * 16 + uint32_t(d);
    }
    if (k == 0 || (!braced && k != count)) fail("bad hex escape");
    if (braced) {
      if (!peek('}')) fail("bad hex escape");
      ++i_;
    }
    if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) fail("escape of a surrogate or beyond U+10FFFF");
    return v;
  }

  // After a backslash: a class (\d ...) or one code point.
  std::vector<CodeRange> escape() {
    if (i_ >= p_.size()) fail("a trailing backslash");
    const char c = p_[i_++];
    switch (c) {
      case 'd': return kDigit;
      case 'D': return complement(kDigit);
      case 'w': return kWord;
      case 'W': return complement(kWord);
      case 's': return kRegexSpaceClass;
      case 'S': return complement(kRegexSpaceClass);
      case 'n': return {{'\n', '\n'}};
      case 'r': return {{'\r', '\r'}};
      case 't': return {{'\t', '\t'}};
      case 'f': return {{'\f', '\f'}};
      case 'v': return {{'\v', '\v'}};
      case '0': return {{0, 0}};
      case 'x': {
        const bool braced = peek('{');
        if (braced) ++i_;
        const uint32_t v = hex_digits(2, braced);
        return {{v, v}};
      }
      case 'u': {
        const uint32_t v = hex_digits(4, false);
        return {{v, v}};
      }
      default:
        if (isalnum(uint8_t(c))) fail("unsupported escape \\" + std::string(1, c));
        if (uint8_t(c) >= 0x80) fail("unsupported escape of a non-ASCII character");
        return {{uint8_t(c), uint8_t(c)}};
    }
  }

  std::vector<CodeRange> char_class() {  // after '['
    bool negated = false;
    if (peek('^')) {
      ++i_;
      negated = true;
    }
    std::vector<CodeRange> set;
    if (peek(']')) fail("an empty class (write \\] for a literal ])");
    while (!peek(']')) {
      if (i_ >= p_.size()) fail("unterminated class");
      if (peek('[') && i_ + 1 < p_.size() && p_[i_ + 1] == ':') fail("POSIX classes are not supported");
      std::vector<CodeRange> item;
      if (peek('\\')) {
        ++i_;
        item = escape();
      } else {
        const uint32_t cp = utf8_char();
        item = {{cp, cp}};
      }
      // A range a-b, when '-' follows a single character and does not end the class.
      if (item.size() == 1 && item[0].lo == item[0].hi && peek('-') && i_ + 1 < p_.size() && p_[i_ + 1] != ']') {
        ++i_;
        uint32_t hi;
        if (peek('\\')) {
          ++i_;
          const auto e = escape();
          if (e.size() != 1 || e[0].lo != e[0].hi) fail("a class as a range's end");
          hi = e[0].lo;
        } else {
          hi = utf8_char();
        }
        if (hi < item[0].lo) fail("a range out of order");
        item[0].hi = hi;
      }
      set.insert(set.end(), item.begin(), item.end());
    }
    ++i_;
    set = normalize(std::move(set));
    return negated ? complement(set) : set;
  }

  Expr atom(int depth) {
    const char c = p_[i_];
    switch (c) {
      case '(': {
        ++i_;
        if (peek('?')) {
          if (i_ + 1 < p_.size() && p_[i_ + 1] == ':')
            i_ += 2;
          else
            fail("only (?:...) groups are supported");
        }
        Expr e = alternation(depth + 1);
        if (!peek(')')) fail("unbalanced '('");
        ++i_;
        return e;
      }
      case '[': ++i_; return class_expr(char_class());
      case '.': ++i_; return utf8_expr(complement({{'\n', '\n'}}));
      case '\\': ++i_; return class_expr(escape());
      case '*': case '+': case '?': case '{': fail("a quantifier with nothing to repeat");
      case '^': case '$': fail("anchors are supported only at the very start and end");
      case ')': fail("unbalanced ')'");
      default: {
        const uint32_t cp = utf8_char();
        return literal(encode_utf8(char32_t(cp)));  // a scalar value: utf8_char() refused surrogates
      }
    }
  }

  Expr class_expr(const std::vector<CodeRange>& set) {
    if (set.empty()) return alt({});
    return utf8_expr(set);
  }
};

}  // namespace

CompiledRegex compile_regex(std::string_view pattern, const std::string& keyword, const std::string& pointer) {
  return RegexParser(pattern, keyword, pointer).parse();
}

}  // namespace astrai::grammar
