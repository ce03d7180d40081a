// Random regexes of the documented subset, written out as pattern text, with
// a sampler of strings they match: the test's own generator, independent of
// engine/grammar (PCRE2 then judges both the grammar and the sampler).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "engine/text/utf8.h"

namespace astrai::test {

struct RandomRegex {
  enum class Kind { Literal, Class, Dot, Seq, Alt, Repeat } kind = Kind::Seq;
  std::string text;                                  // Literal: one character (UTF-8); Class: pattern text
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // Class: code points it matches
  std::vector<RandomRegex> items;                     // Seq, Alt, Repeat
  int min = 0, max = 0;                               // Repeat (max -1: unbounded)
  bool escape_literal = false;
};

// Characters the generator and the random strings draw from: ASCII letters
// and digits, metacharacters (escaped), controls, and 2-, 3- and 4-byte UTF-8.
inline const std::vector<uint32_t>& regex_alphabet() {
  static const std::vector<uint32_t> a = {'a', 'b', 'c', 'z', 'A', '0', '5', '9', '_', ' ', '-', '.', '*', '(', '[', '"',
                                          '\\', '/', '\n', '\t', 0x01, 0xE9, 0x3B1, 0x20AC, 0x4E2D, 0x1F600};
  return a;
}

// How a code point is written inside a pattern (outside or inside a class).
inline std::string pattern_char(uint32_t cp) {
  if (cp == '\n') return "\\n";
  if (cp == '\t') return "\\t";
  if (cp < 0x20) {
    char buf[8];
    snprintf(buf, sizeof buf, "\\x%02x", cp);
    return buf;
  }
  if (cp < 0x80 && std::string("\\^$.|?*+()[]{}-/\"").find(char(cp)) != std::string::npos) return std::string("\\") + char(cp);
  return astrai::encode_utf8(char32_t(cp));
}

class RegexGenerator {
 public:
  // `schema_safe`: only constructs whose meaning Python's re shares (no
  // negated \D \W \S, which are Unicode-wide there), for JSON Schema patterns.
  RegexGenerator(uint64_t seed, bool schema_safe) : rng_(seed), schema_safe_(schema_safe) {}

  RandomRegex make(int depth) {
    const int pick = int(rng_() % (depth <= 0 ? 3 : 7));
    RandomRegex r;
    switch (pick) {
      case 0: {
        r.kind = RandomRegex::Kind::Literal;
        const uint32_t cp = any_char();
        r.text = pattern_char(cp);
        r.ranges = {{cp, cp}};
        return r;
      }
      case 1: return make_class();
      case 2:
        if (rng_() % 3 == 0) {
          r.kind = RandomRegex::Kind::Dot;
          r.text = ".";
          r.ranges = {{0, '\n' - 1}, {'\n' + 1, 0xD7FF}, {0xE000, 0x10FFFF}};
          return r;
        }
        return make_class();
      case 3:
      case 4: {
        r.kind = RandomRegex::Kind::Seq;
        const int n = 1 + int(rng_() % 4);
        for (int i = 0; i < n; ++i) r.items.push_back(make(depth - 1));
        return r;
      }
      case 5: {
        r.kind = RandomRegex::Kind::Alt;
        const int n = 2 + int(rng_() % 3);
        for (int i = 0; i < n; ++i) r.items.push_back(make(depth - 1));
        return r;
      }
      default: {
        r.kind = RandomRegex::Kind::Repeat;
        r.items.push_back(make(depth - 1));
        const int form = int(rng_() % 6);
        static constexpr int kForms[6][2] = {{0, -1}, {1, -1}, {0, 1}, {2, 2}, {1, 3}, {2, -1}};
        r.min = kForms[form][0];
        r.max = kForms[form][1];
        return r;
      }
    }
  }

  static std::string pattern(const RandomRegex& r) {
    switch (r.kind) {
      case RandomRegex::Kind::Literal:
      case RandomRegex::Kind::Class:
      case RandomRegex::Kind::Dot: return r.text;
      case RandomRegex::Kind::Seq: {
        std::string s = "(?:";
        for (const auto& i : r.items) s += pattern(i);
        return s + ")";
      }
      case RandomRegex::Kind::Alt: {
        std::string s = "(";
        for (size_t k = 0; k < r.items.size(); ++k) s += (k ? "|" : "") + pattern(r.items[k]);
        return s + ")";
      }
      case RandomRegex::Kind::Repeat: {
        std::string q = r.min == 0 && r.max == -1 ? "*"
                        : r.min == 1 && r.max == -1 ? "+"
                        : r.min == 0 && r.max == 1  ? "?"
                        : r.max == -1               ? "{" + std::to_string(r.min) + ",}"
                        : r.min == r.max            ? "{" + std::to_string(r.min) + "}"
                                                    : "{" + std::to_string(r.min) + "," + std::to_string(r.max) + "}";
        return "(?:" + pattern(r.items[0]) + ")" + q;
      }
    }
    return "";
  }

  // A random string the regex matches.
  std::string sample(const RandomRegex& r) {
    switch (r.kind) {
      case RandomRegex::Kind::Literal:
      case RandomRegex::Kind::Class:
      case RandomRegex::Kind::Dot: {
        // Prefer alphabet characters inside the set; else any code point of it.
        std::vector<uint32_t> in;
        for (const uint32_t c : regex_alphabet())
          for (const auto& [lo, hi] : r.ranges)
            if (lo <= c && c <= hi) in.push_back(c);
        if (!in.empty() && rng_() % 4 != 0) return astrai::encode_utf8(char32_t(in[rng_() % in.size()]));
        const auto& [lo, hi] = r.ranges[rng_() % r.ranges.size()];
        return astrai::encode_utf8(char32_t(lo + uint32_t(rng_() % (uint64_t(hi - lo) + 1))));
      }
      case RandomRegex::Kind::Seq: {
        std::string s;
        for (const auto& i : r.items) s += sample(i);
        return s;
      }
      case RandomRegex::Kind::Alt: return sample(r.items[rng_() % r.items.size()]);
      case RandomRegex::Kind::Repeat: {
        const int n = r.min + int(rng_() % uint64_t((r.max == -1 ? 3 : r.max - r.min) + 1));
        std::string s;
        for (int i = 0; i < n; ++i) s += sample(r.items[0]);
        return s;
      }
    }
    return "";
  }

  // A random string over the alphabet.
  std::string noise(int max_chars) {
    std::string s;
    const int n = int(rng_() % uint64_t(max_chars + 1));
    for (int i = 0; i < n; ++i) s += astrai::encode_utf8(char32_t(any_char()));
    return s;
  }
  // `s` with a few characters inserted, deleted or replaced.
  std::string mutate(const std::string& s) {
    std::vector<std::string> chars;
    for (size_t i = 0; i < s.size();) {
      size_t n = 1;
      while (i + n < s.size() && (uint8_t(s[i + n]) & 0xC0) == 0x80) ++n;
      chars.push_back(s.substr(i, n));
      i += n;
    }
    const int edits = 1 + int(rng_() % 2);
    for (int e = 0; e < edits; ++e) {
      const size_t at = chars.empty() ? 0 : rng_() % (chars.size() + 1);
      const int op = int(rng_() % 3);
      if (op == 0 || chars.empty())
        chars.insert(chars.begin() + std::ptrdiff_t(at), astrai::encode_utf8(char32_t(any_char())));
      else if (op == 1 && at < chars.size())
        chars.erase(chars.begin() + std::ptrdiff_t(at));
      else if (at < chars.size())
        chars[at] = astrai::encode_utf8(char32_t(any_char()));
    }
    std::string out;
    for (const auto& c : chars) out += c;
    return out;
  }
  std::mt19937_64& rng() { return rng_; }

 private:
  std::mt19937_64 rng_;
  bool schema_safe_;

  uint32_t any_char() { return regex_alphabet()[rng_() % regex_alphabet().size()]; }

  RandomRegex make_class() {
    RandomRegex r;
    r.kind = RandomRegex::Kind::Class;
    struct Named {
      const char* text;
      std::vector<std::pair<uint32_t, uint32_t>> ranges;
      bool negated_unicode;  // differs from Python's Unicode-wide meaning
    };
    static const std::vector<Named> named = {
        {"\\d", {{'0', '9'}}, false},
        {"\\w", {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}, false},
        {"\\s", {{'\t', '\r'}, {' ', ' '}}, false},
        {"[a-c]", {{'a', 'c'}}, false},
        {"[a-cA0-5_]", {{'0', '5'}, {'A', 'A'}, {'_', '_'}, {'a', 'c'}}, false},
        {"[é-ω]", {{0xE9, 0x3C9}}, false},
        {"[\\-.a]", {{'-', '.'}, {'a', 'a'}}, false},
        {"[\\x00-\\x1f\"]", {{0, 0x1F}, {'"', '"'}}, false},
        {"[€-中😀]", {{0x20AC, 0x4E2D}, {0x1F600, 0x1F600}}, false},
        {"\\D", {{0, '0' - 1}, {'9' + 1, 0xD7FF}, {0xE000, 0x10FFFF}}, true},
        {"\\W", {{0, '0' - 1}, {'9' + 1, 'A' - 1}, {'Z' + 1, '_' - 1}, {'`', '`'}, {'z' + 1, 0xD7FF}, {0xE000, 0x10FFFF}}, true},
        {"\\S", {{0, 8}, {14, 31}, {'!', 0xD7FF}, {0xE000, 0x10FFFF}}, true},
        {"[^a-c\\n]", {{0, 9}, {11, 'a' - 1}, {'d', 0xD7FF}, {0xE000, 0x10FFFF}}, false},
        {"[^\\d\\s]", {{0, 8}, {14, 31}, {'!', '/'}, {':', 0xD7FF}, {0xE000, 0x10FFFF}}, true},
    };
    for (;;) {
      const auto& n = named[rng_() % named.size()];
      if (schema_safe_ && n.negated_unicode) continue;
      r.text = n.text;
      r.ranges = n.ranges;
      return r;
    }
  }
};

}  // namespace astrai::test
