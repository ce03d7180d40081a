// The regex subset, compiled to a byte-level Expr (UTF-8 aware).
//
//   literals (UTF-8 text), escaped metacharacters (\. \* \\ \/ ...), \n \r \t \f \v \0,
//   \xHH, \x{H...}, \uHHHH; classes [abc] [a-z] [^...] with \d \w \s \D \W \S inside;
//   \d \w \s (ASCII: [0-9], [A-Za-z0-9_], [ \t\n\v\f\r]) and \D \W \S; '.' (any code
//   point but \n); groups (...) and (?:...); alternation |; quantifiers * + ? {m}
//   {m,} {m,n} (m, n <= 1000; a lazy '?' after one is accepted: the matched
//   language is the same); ^ only at the very start, $ only at the very end.
// Anything else (backreferences, lookaround, \b, named groups, flags, possessive
// quantifiers) throws ConstraintError with keyword "" (or the caller's).
#pragma once

#include <string>
#include <string_view>

#include "engine/grammar/grammar.h"

namespace astrai::grammar {

struct CompiledRegex {
  Expr expr;
  bool anchored_start = false, anchored_end = false;  // the pattern began with ^ / ended with $
};

// keyword and pointer name the pattern in errors ("pattern", "/properties/a/pattern").
CompiledRegex compile_regex(std::string_view pattern, const std::string& keyword = "",
                            const std::string& pointer = "");

}  // namespace astrai::grammar
