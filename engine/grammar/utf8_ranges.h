// Sets of Unicode code points as byte-level expressions: each range of code
// points becomes the alternation of UTF-8 byte-range sequences that encode it
// (the construction RE2 and Rust's regex-syntax use). Surrogates are never
// encoded (UTF-8 forbids them).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/grammar/grammar.h"

namespace astrai::grammar {

struct CodeRange {
  uint32_t lo, hi;  // inclusive
};

// Sorted, merged, without surrogates and within [0, 0x10FFFF].
std::vector<CodeRange> normalize(std::vector<CodeRange> ranges);
// The code points not in `ranges` (after normalize).
std::vector<CodeRange> complement(const std::vector<CodeRange>& ranges);
// An Expr that reads exactly the UTF-8 encodings of the code points in `ranges`.
Expr utf8_expr(const std::vector<CodeRange>& ranges);

}  // namespace astrai::grammar
