#include "engine/grammar/utf8_ranges.h"

#include <algorithm>
#include <string>

#include "engine/text/utf8.h"

namespace astrai::grammar {

std::vector<CodeRange> normalize(std::vector<CodeRange> ranges) {
  std::vector<CodeRange> cut;
  for (auto r : ranges) {
    if (r.lo > r.hi || r.lo > 0x10FFFF) continue;
    r.hi = std::min<uint32_t>(r.hi, 0x10FFFF);
    if (r.lo < 0xD800 && r.hi > 0xDFFF) {
      cut.push_back({r.lo, 0xD7FF});
      cut.push_back({0xE000, r.hi});
    } else if (r.lo >= 0xD800 && r.hi <= 0xDFFF) {
      continue;
    } else if (r.lo >= 0xD800 && r.lo <= 0xDFFF) {
      cut.push_back({0xE000, r.hi});
    } else if (r.hi >= 0xD800 && r.hi <= 0xDFFF) {
      cut.push_back({r.lo, 0xD7FF});
    } else {
      cut.push_back(r);
    }
  }
  std::sort(cut.begin(), cut.end(), [](CodeRange a, CodeRange b) { return a.lo < b.lo; });
  std::vector<CodeRange> out;
  for (const auto& r : cut) {
    if (!out.empty() && r.lo <= out.back().hi + 1)
      out.back().hi = std::max(out.back().hi, r.hi);
    else
      out.push_back(r);
  }
  return out;
}

std::vector<CodeRange> complement(const std::vector<CodeRange>& ranges) {
  std::vector<CodeRange> out;
  uint32_t next = 0;
  for (const auto& r : normalize(ranges)) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= 0x10FFFF) out.push_back({next, 0x10FFFF});
  return normalize(out);
}

namespace {

// [lo, hi] share one encoded length; splits until every continuation byte
// position spans either one value or the full 0x80..0xBF, then emits one
// sequence of byte ranges.
void split(uint32_t lo, uint32_t hi, std::vector<Expr>& out) {
  const size_t n = encode_utf8(char32_t(lo)).size();
  for (size_t i = 1; i < n; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;  // the low bits that i continuation bytes hold
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split(lo, lo | m, out);
        split((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        split(lo, (hi & ~m) - 1, out);
        split(hi & ~m, hi, out);
        return;
      }
    }
  }
  const std::string a = encode_utf8(char32_t(lo)), b = encode_utf8(char32_t(hi));  // no surrogates: normalize() cut them
  std::vector<Expr> items;
  for (size_t k = 0; k < a.size(); ++k) items.push_back(bytes({{uint8_t(a[k]), uint8_t(b[k])}}));
  out.push_back(seq(std::move(items)));
}

}  // namespace

Expr utf8_expr(const std::vector<CodeRange>& ranges) {
  std::vector<Expr> alts;
  std::vector<ByteRange> ascii;
  for (const auto& r : normalize(ranges)) {
    static constexpr uint32_t kLengthEnds[] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
    uint32_t lo = r.lo;
    for (const uint32_t end : kLengthEnds) {
      if (lo > r.hi) break;
      if (lo > end) continue;
      const uint32_t hi = std::min(r.hi, end);
      if (end == 0x7F)
        ascii.push_back({uint8_t(lo), uint8_t(hi)});
      else
        split(lo, hi, alts);
      lo = hi + 1;
    }
  }
  if (!ascii.empty()) alts.insert(alts.begin(), bytes(std::move(ascii)));
  return alts.size() == 1 ? std::move(alts[0]) : alt(std::move(alts));
}

}  // namespace astrai::grammar
