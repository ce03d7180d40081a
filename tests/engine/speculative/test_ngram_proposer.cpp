// N-gram prompt lookup (engine/speculative/ngram_proposer.h): the rule as its
// header states it, checked by its three defining properties on drawn
// contexts over tiny alphabets (where repeats are common), and on cases
// worked by hand. Whether proposals are any good is not this test's business:
// a proposal only changes speed, never tokens (tests/reference/test_speculative.cpp).
#include <algorithm>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "engine/speculative/ngram_proposer.h"

using namespace astrai;

namespace {

std::vector<int> propose(std::vector<int> context, int min_match, int max_match, int tokens, int most = 100) {
  NgramOptions o;
  o.min_match = min_match;
  o.max_match = max_match;
  o.tokens = tokens;
  return propose_ngram(context, o, most);
}

// Does context[j, j + n) equal the last n tokens?
bool matches_suffix(const std::vector<int>& context, long j, long n) {
  const long size = long(context.size());
  return std::equal(context.begin() + (size - n), context.end(), context.begin() + j);
}

}  // namespace

TEST_CASE("n-gram lookup proposes what followed the latest longest repeat of the context's end", "[speculative]") {
  //                      0  1  2  3  4  5  6  7  8  9
  CHECK(propose({1, 2, 3, 9, 1, 2, 3, 8, 1, 2, 3}, 1, 3, 2) == std::vector<int>{8, 1});  // the latest of two repeats
  CHECK(propose({1, 2, 3, 9, 5, 2, 3, 8, 1, 2, 3}, 1, 3, 4) == std::vector<int>{9, 5, 2, 3});  // the longest match wins
  CHECK(propose({1, 2, 3, 9, 5, 2, 3, 8, 1, 2, 3}, 1, 2, 4) == std::vector<int>{8, 1, 2, 3});  // ... within max_match
  CHECK(propose({5, 6, 7, 6}, 1, 3, 3) == std::vector<int>{7, 6});      // runs into the end: fewer tokens
  CHECK(propose({5, 6, 7, 6}, 2, 3, 3).empty());                        // no repeat of length min_match
  CHECK(propose({4, 4, 4, 4}, 2, 4, 5) == std::vector<int>{4});         // overlapping repeats count
  CHECK(propose({1, 2, 1, 2}, 1, 4, 5, 1) == std::vector<int>{1});      // at most `most`
  CHECK(propose({7}, 1, 4, 5).empty());
  CHECK(propose({}, 1, 4, 5).empty());
  CHECK_THROWS_WITH(propose({1, 1}, 0, 2, 3), Catch::Contains("min_match"));
  CHECK_THROWS_WITH(propose({1, 1}, 3, 2, 3), Catch::Contains("max_match"));
  CHECK_THROWS_WITH(propose({1, 1}, 1, 2, 0), Catch::Contains("tokens"));
}

TEST_CASE("n-gram lookup: a proposal continues a match, no longer match exists, and no later one", "[speculative]") {
  rc::prop("the three properties of the rule", [] {
    const auto context = *rc::gen::container<std::vector<int>>(rc::gen::inRange(0, 3));
    const int min_match = *rc::gen::inRange(1, 4), max_match = min_match + *rc::gen::inRange(0, 4);
    const int tokens = *rc::gen::inRange(1, 8), most = *rc::gen::inRange(0, 8);
    const auto got = propose(context, min_match, max_match, tokens, most);
    const long size = long(context.size()), want = std::min(tokens, most);
    // The longest n in range with an earlier occurrence (j + n < size), and its latest start.
    long best_n = 0, best_j = -1;
    for (long n = min_match; n <= max_match && n < size; ++n)
      for (long j = 0; j + n < size; ++j)
        if (matches_suffix(context, j, n) && (n > best_n || (n == best_n && j > best_j))) best_n = n, best_j = j;
    RC_TAG(best_j < 0 ? "no match" : "match");
    if (best_j < 0 || want <= 0) {
      RC_ASSERT(got.empty());
      return;
    }
    const long from = best_j + best_n;
    const std::vector<int> expected(context.begin() + from, context.begin() + std::min(size, from + want));
    RC_ASSERT(got == expected);
  });
}
