#include "engine/grammar/json_rules.h"

#include "engine/grammar/json_schema.h"
#include "engine/grammar/utf8_ranges.h"

namespace astrai::grammar {

namespace {

Expr hex() { return bytes({{'0', '9'}, {'A', 'F'}, {'a', 'f'}}); }
Expr digit() { return bytes({{'0', '9'}}); }

std::string escape_byte(uint8_t b) {
  switch (b) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: {
      static constexpr char kHex[] = "0123456789abcdef";
      return std::string("\\u00") + kHex[b >> 4] + kHex[b & 15];
    }
  }
}

bool needs_escape(uint8_t b) { return b < 0x20 || b == '"' || b == '\\'; }

// Canonical decimal strings of [a, b], both with the same number of digits.
Expr same_length_range(const std::string& a, const std::string& b) {
  // Every string of this length: without this the recursion below is exponential.
  if (a.find_first_not_of('0') == std::string::npos && b.find_first_not_of('9') == std::string::npos)
    return repeat(digit(), int(a.size()), int(a.size()));
  if (a.size() == 1) return bytes({{uint8_t(a[0]), uint8_t(b[0])}});
  const std::string ra = a.substr(1), rb = b.substr(1);
  if (a[0] == b[0]) return seq({byte_char(uint8_t(a[0])), same_length_range(ra, rb)});
  std::vector<Expr> alts;
  alts.push_back(seq({byte_char(uint8_t(a[0])), same_length_range(ra, std::string(ra.size(), '9'))}));
  if (b[0] - a[0] > 1)
    alts.push_back(seq({bytes({{uint8_t(a[0] + 1), uint8_t(b[0] - 1)}}), repeat(digit(), int(ra.size()), int(ra.size()))}));
  alts.push_back(seq({byte_char(uint8_t(b[0])), same_length_range(std::string(rb.size(), '0'), rb)}));
  return alt(std::move(alts));
}

// Canonical decimal strings of the naturals in [a, b], 0 <= a <= b.
Expr natural_range(int64_t a, int64_t b) {
  std::vector<Expr> alts;
  const size_t la = std::to_string(a).size(), lb = std::to_string(b).size();
  int64_t low = 1;  // 10^(L-1)
  for (size_t l = 1; l < la; ++l) low *= 10;
  for (size_t l = la; l <= lb; ++l) {
    const int64_t lo = std::max(a, l == 1 ? int64_t(0) : low);
    const int64_t hi = l == lb ? b : low * 10 - 1;  // l < lb <= 19 digits: low * 10 fits
    if (lo <= hi) alts.push_back(same_length_range(std::to_string(lo), std::to_string(hi)));
    if (l < lb) low *= 10;
  }
  return alts.size() == 1 ? std::move(alts[0]) : alt(std::move(alts));
}

}  // namespace

Expr json_string_char() {
  const Expr plain = utf8_expr(complement({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}));
  const Expr h = hex();
  const Expr code = alt({
      seq({bytes({{'0', '9'}, {'A', 'C'}, {'a', 'c'}}), h, h, h}),
      seq({bytes({{'D', 'D'}, {'d', 'd'}}), bytes({{'0', '7'}}), h, h}),
      seq({bytes({{'E', 'F'}, {'e', 'f'}}), h, h, h}),
      // A surrogate pair: high D800-DBFF then low DC00-DFFF.
      seq({bytes({{'D', 'D'}, {'d', 'd'}}), bytes({{'8', '9'}, {'A', 'B'}, {'a', 'b'}}), h, h, literal("\\u"),
           bytes({{'D', 'D'}, {'d', 'd'}}), bytes({{'C', 'F'}, {'c', 'f'}}), h, h}),
  });
  const Expr escape = seq({byte_char('\\'), alt({bytes({{'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'b', 'b'}, {'f', 'f'},
                                                         {'n', 'n'}, {'r', 'r'}, {'t', 't'}}),
                                                  seq({byte_char('u'), code})})});
  return alt({plain, escape});
}

Expr json_escaped(const Expr& e) {
  if (e.kind != Expr::Kind::Bytes) {
    Expr out = e;
    for (auto& item : out.items) item = json_escaped(item);
    return out;
  }
  std::vector<ByteRange> plain;
  std::vector<Expr> escapes;
  for (const auto& r : e.ranges) {
    int start = -1;
    for (int b = r.lo; b <= r.hi + 1; ++b) {
      const bool ok = b <= r.hi && !needs_escape(uint8_t(b));
      if (ok && start < 0) start = b;
      if (!ok && start >= 0) {
        plain.push_back({uint8_t(start), uint8_t(b - 1)});
        start = -1;
      }
      if (b <= r.hi && needs_escape(uint8_t(b))) escapes.push_back(literal(escape_byte(uint8_t(b))));
    }
  }
  if (escapes.empty()) return e;
  if (!plain.empty()) escapes.insert(escapes.begin(), bytes(std::move(plain)));
  return escapes.size() == 1 ? std::move(escapes[0]) : alt(std::move(escapes));
}

Expr any_code_point() { return utf8_expr({{0, 0x10FFFF}}); }

Expr integer_range(int64_t lo, int64_t hi) {
  std::vector<Expr> alts;
  if (hi >= 0) alts.push_back(natural_range(std::max<int64_t>(lo, 0), hi));
  if (lo < 0) alts.push_back(seq({byte_char('-'), natural_range(std::max<int64_t>(1, -hi), -lo)}));
  return alts.size() == 1 ? std::move(alts[0]) : alt(std::move(alts));
}

Expr JsonRules::ws() const { return repeat(bytes(kJsonWhitespace), 0, kMaxWhitespace); }

JsonRules::JsonRules(GrammarBuilder& b) {
  string_ = b.add("string", seq({byte_char('"'), star(json_string_char()), byte_char('"')}));
  const Expr natural = alt({byte_char('0'), seq({bytes({{'1', '9'}}), repeat(digit(), 0, 17)})});
  integer_ = b.add("integer", seq({optional(byte_char('-')), natural}));
  // Bounded digits, so that every number is finite for every parser (a double).
  number_ = b.add("number", seq({optional(byte_char('-')),
                                 alt({byte_char('0'), seq({bytes({{'1', '9'}}), repeat(digit(), 0, 15)})}),
                                 optional(seq({byte_char('.'), repeat(digit(), 1, 16)})),
                                 optional(seq({bytes({{'E', 'E'}, {'e', 'e'}}), optional(bytes({{'+', '+'}, {'-', '-'}})),
                                               repeat(digit(), 1, 2)}))}));
  value_ = b.declare("value");
  object_ = b.declare("object");
  array_ = b.declare("array");
  const Expr member = seq({string(), ws(), byte_char(':'), ws(), value()});
  b.define(object_, seq({byte_char('{'), ws(), optional(seq({member, star(seq({sep(), member})), ws()})), byte_char('}')}));
  b.define(array_, seq({byte_char('['), ws(), optional(seq({value(), star(seq({sep(), value()})), ws()})), byte_char(']')}));
  b.define(value_, alt({call(object_), call(array_), string(), number(), literal("true"), literal("false"), literal("null")}));
}

}  // namespace astrai::grammar
