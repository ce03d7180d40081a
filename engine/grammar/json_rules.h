// The building blocks of JSON text as grammar expressions and rules: bounded
// whitespace, strings (with JSON escapes), numbers, integers in a range, and
// any JSON value. Shared by the schema compiler and json_object.
#pragma once

#include <cstdint>
#include <string>

#include "engine/grammar/grammar.h"

namespace astrai::grammar {

// One character of a JSON string's text: an unescaped code point (not a
// control, '"' or '\'), or an escape (\uXXXX only for a non-surrogate or a
// valid surrogate pair: lone surrogates are not valid Unicode text).
Expr json_string_char();
// `e` (an Expr over a string's decoded bytes) as it appears inside JSON quotes:
// every '"', '\' and control byte replaced by its one canonical escape
// (\" \\ \b \f \n \r \t, else \u00xx), as nlohmann-json and Python write them.
Expr json_escaped(const Expr& e);
// Any code point (the implicit .* around an unanchored JSON Schema pattern).
Expr any_code_point();
// Integers in [lo, hi] in canonical decimal (no leading zeros, no "-0").
Expr integer_range(int64_t lo, int64_t hi);
// The largest magnitude of an integer or a number's integer part the grammar writes.
inline constexpr int64_t kMaxJsonInteger = 999'999'999'999'999'999;

class JsonRules {
 public:
  explicit JsonRules(GrammarBuilder& b);
  // Inline, not a rule of its own: a token such as ` "name` then stays inside
  // the enclosing rule, where the token cache decides it; as a called rule,
  // every token that starts with a space would be uncertain (half of a BPE
  // vocabulary, checked again at every step).
  Expr ws() const;
  Expr sep() const { return seq({ws(), byte_char(','), ws()}); }  // between members/elements
  Expr string() const { return call(string_); }
  Expr number() const { return call(number_); }
  Expr integer() const { return call(integer_); }
  Expr value() const { return call(value_); }  // any JSON value
  Expr any_object() const { return call(object_); }

 private:
  int string_, number_, integer_, value_, object_, array_;
};

}  // namespace astrai::grammar
