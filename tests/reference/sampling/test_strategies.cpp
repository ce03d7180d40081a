// Each strategy's rule as a property over random logits, checked through the
// pipeline's final distribution against the rule restated in the test.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "reference/sampling/sampler.h"
#include "tests/reference/sampling/sampling_generators.h"
#include "tests/reference/sampling/sampling_oracle.h"

using astrai::SamplingParams;

// In a namespace of its own, TEST_CASEs too: the test program is a unity
// build (tests/meson.build), where other files have helpers of the same names.
namespace test_strategies {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<double> distribution(const std::vector<float>& logits, float temperature, int top_k, float top_p) {
  return astrai::probabilities(logits, SamplingParams{temperature, top_k, top_p, std::nullopt});
}

int count_nonzero(const std::vector<double>& p) {
  return static_cast<int>(std::count_if(p.begin(), p.end(), [](double v) { return v > 0.0; }));
}

int count_finite(const std::vector<float>& logits) {
  return static_cast<int>(std::count_if(logits.begin(), logits.end(), [](float v) { return std::isfinite(v); }));
}


TEST_CASE("top-k keeps at most k tokens: the k largest, ties to the lower id", "[sampling][top_k]") {
  rc::prop("with heavy ties, kept = the tokens with fewer than k tokens ahead", [] {
    const std::vector<float> logits = *astrai::test::gen_tied_logits();
    const int n = static_cast<int>(logits.size());
    const int k = *rc::gen::inRange(0, n + 3);
    const std::vector<double> p = distribution(logits, 1.0f, k, 1.0f);
    RC_ASSERT(count_nonzero(p) == (k == 0 ? n : std::min(k, n)));
    const std::vector<double> z(logits.begin(), logits.end());
    for (int i = 0; i < n; ++i) {
      int ahead = 0;  // tokens with a larger logit, or the same logit and a lower id
      for (int j = 0; j < n; ++j) ahead += astrai::test::ahead_of(z, j, i) ? 1 : 0;
      RC_ASSERT((p[i] > 0.0) == (k == 0 || ahead < k));
    }
  });
  rc::prop("on any logits, top-k keeps min(k, finite) candidates and no other token has probability", [] {
    const std::vector<float> logits = *astrai::test::gen_logits();
    const int k = *rc::gen::inRange(1, 70);
    const float temperature = *astrai::test::gen_temperature();
    const SamplingParams params{temperature, k, 1.0f, std::nullopt};
    // The count is asserted on the kept candidates, not on p > 0: at temperature
    // 0.05 a logit 40 below the maximum has probability exp(-800), which is
    // exactly 0 in float64, so "nonzero probability" undercounts what top-k kept.
    RC_ASSERT(int(astrai::kept_candidates(logits, params).size()) == std::min(k, count_finite(logits)));
    RC_ASSERT(count_nonzero(astrai::probabilities(logits, params)) <= std::min(k, count_finite(logits)));
  });
}

TEST_CASE("top-k ties at the k-th value go to the lower ids", "[sampling][top_k]") {
  // Four tokens share the 2nd-largest logit; k = 3 keeps token 1 (the max)
  // and the two lowest ids among the tied ones: 0 and 2.
  const std::vector<float> logits = {2.0f, 5.0f, 2.0f, 2.0f, -1.0f, 2.0f};
  const std::vector<double> p = distribution(logits, 1.0f, 3, 1.0f);
  CHECK(p[0] > 0.0);
  CHECK(p[1] > 0.0);
  CHECK(p[2] > 0.0);
  CHECK(p[3] == 0.0);
  CHECK(p[4] == 0.0);
  CHECK(p[5] == 0.0);
}

TEST_CASE("top-p keeps the smallest most-likely prefix whose mass reaches p", "[sampling][top_p]") {
  rc::prop("kept = a prefix of the sorted distribution, reaching p, minimal", [] {
    const std::vector<float> logits = *astrai::test::gen_logits();
    const float top_p = *astrai::test::gen_top_p();
    const std::vector<double> kept = distribution(logits, 1.0f, 0, top_p);
    // The distribution top-p starts from, computed here in float64.
    const std::vector<double> z(logits.begin(), logits.end());
    std::vector<bool> finite(z.size());
    for (std::size_t i = 0; i < z.size(); ++i) finite[i] = z[i] > -kInf;
    const std::vector<double> q = astrai::test::oracle_softmax(z, finite);
    std::vector<std::size_t> order;  // probability descending, ties by lower id
    for (std::size_t i = 0; i < q.size(); ++i)
      if (finite[i]) order.push_back(i);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return q[a] > q[b] || (q[a] == q[b] && a < b); });
    const int m = count_nonzero(kept);
    RC_ASSERT(m >= 1);
    for (std::size_t r = 0; r < order.size(); ++r) RC_ASSERT((kept[order[r]] > 0.0) == (static_cast<int>(r) < m));
    if (top_p == 1.0f) {
      RC_ASSERT(m == static_cast<int>(order.size()));
      return;
    }
    double mass = 0.0;
    for (int r = 0; r < m - 1; ++r) mass += q[order[r]];
    RC_ASSERT(mass < static_cast<double>(top_p));                   // minimal: one fewer is not enough
    RC_ASSERT(mass + q[order[m - 1]] >= static_cast<double>(top_p));  // and it reaches p
  });
}

TEST_CASE("top-p small cases by hand", "[sampling][top_p]") {
  // Probabilities 0.5, 0.25, 0.125, 0.125 (logits log2 apart).
  const float l = std::log(2.0f);
  const std::vector<float> logits = {3 * l, 2 * l, l, l};
  CHECK(count_nonzero(distribution(logits, 1.0f, 0, 0.5f)) == 1);
  CHECK(count_nonzero(distribution(logits, 1.0f, 0, 0.6f)) == 2);
  CHECK(count_nonzero(distribution(logits, 1.0f, 0, 0.76f)) == 3);
  CHECK(count_nonzero(distribution(logits, 1.0f, 0, 0.01f)) == 1);  // always at least one
  // The tie between tokens 2 and 3 goes to the lower id.
  const std::vector<double> p = distribution(logits, 1.0f, 0, 0.8f);
  CHECK(p[2] > 0.0);
  CHECK(p[3] == 0.0);
  // Four equal logits: masses exactly 1/4 each, so the running sum hits p =
  // 0.5 exactly after two tokens; "reaches" means >=, so two are kept, the
  // lower ids.
  const std::vector<double> equal = distribution({0.0f, 0.0f, 0.0f, 0.0f}, 1.0f, 0, 0.5f);
  CHECK(equal == std::vector<double>{0.5, 0.5, 0.0, 0.0});
}

TEST_CASE("temperature divides the logits before the softmax", "[sampling][temperature]") {
  rc::prop("probabilities = softmax(l / T) over the finite logits", [] {
    const std::vector<float> logits = *astrai::test::gen_logits();
    const float temperature = *astrai::test::gen_temperature();
    const std::vector<double> p = distribution(logits, temperature, 0, 1.0f);
    std::vector<double> z(logits.size());
    std::vector<bool> finite(logits.size());
    for (std::size_t i = 0; i < z.size(); ++i) {
      finite[i] = std::isfinite(logits[i]);
      z[i] = finite[i] ? static_cast<double>(logits[i]) / temperature : -kInf;
    }
    const std::vector<double> q = astrai::test::oracle_softmax(z, finite);
    for (std::size_t i = 0; i < p.size(); ++i) RC_ASSERT(std::abs(p[i] - q[i]) <= 1e-12);
  });
}

TEST_CASE("a tiny temperature approaches argmax; temperature 0 is argmax exactly", "[sampling][temperature]") {
  rc::prop("T = 1e-4 on distinct integer logits puts all mass on the argmax", [] {
    const auto values = *rc::gen::suchThat(rc::gen::unique<std::vector<int>>(rc::gen::inRange(-100, 100)),
                                           [](const std::vector<int>& v) { return !v.empty(); });
    const std::vector<float> logits(values.begin(), values.end());
    const std::size_t best = astrai::test::oracle_argmax(logits);
    // The runner-up has probability < exp(-1 / 1e-4) = exp(-10000), i.e. 0 in float64.
    const std::vector<double> p = distribution(logits, 1e-4f, 0, 1.0f);
    RC_ASSERT(p[best] >= 1.0 - 1e-12);
  });
  rc::prop("T = 0 is the first maximum, even with ties", [] {
    const std::vector<float> logits = *astrai::test::gen_tied_logits();
    const int k = *rc::gen::inRange(0, 10);
    const float top_p = *astrai::test::gen_top_p();
    const std::vector<double> p = distribution(logits, 0.0f, k, top_p);
    const std::size_t best = astrai::test::oracle_argmax(logits);
    for (std::size_t i = 0; i < p.size(); ++i) RC_ASSERT(p[i] == (i == best ? 1.0 : 0.0));
  });
}

TEST_CASE("greedy's one-pass argmax is the first maximum on masked rows of any length", "[sampling][temperature]") {
  // Greedy skips the candidate set (sampler.cpp scans eight lanes, then a
  // tail): rows past one and several lanes, -inf masks, ties and signed zeros.
  rc::prop("T = 0 keeps exactly the first maximum", [] {
    std::vector<float> logits = *astrai::test::gen_logits(300);
    if (*rc::gen::arbitrary<bool>())
      for (float& x : logits) x = std::round(x);  // many ties, and +-0
    if (*rc::gen::arbitrary<bool>() && logits.size() > 1) logits[logits.size() / 2] = -0.0f;
    const std::vector<double> p = distribution(logits, 0.0f, 50, 1.0f);
    const std::size_t best = astrai::test::oracle_argmax(logits);
    for (std::size_t i = 0; i < p.size(); ++i) RC_ASSERT(p[i] == (i == best ? 1.0 : 0.0));
  });
  using Catch::Matchers::Contains;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const astrai::SamplingParams greedy{0.0f, 50, 1.0f, 1};
  for (const std::size_t at : {std::size_t(0), std::size_t(5), std::size_t(17)}) {  // in a lane, in the tail
    std::vector<float> row(18, 1.0f);
    row[at] = nan;
    CHECK_THROWS_WITH(astrai::sample(row, greedy), Contains("token " + std::to_string(at) + " is NaN"));
    row[at] = inf;
    CHECK_THROWS_WITH(astrai::sample(row, greedy), Contains("token " + std::to_string(at) + " is +inf"));
  }
  CHECK_THROWS_WITH(astrai::sample(std::vector<float>(20, -inf), greedy), Contains("-inf"));
  CHECK_THROWS_WITH(astrai::sample(std::vector<float>{}, greedy), Contains("empty"));
}

TEST_CASE("bad logits are rejected with the offending index", "[sampling][errors]") {
  using Catch::Matchers::Contains;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  CHECK_THROWS_WITH(astrai::candidates_from_logits(std::vector<float>{1.0f, nan, 2.0f}),
                    Contains("token 1") && Contains("NaN"));
  CHECK_THROWS_WITH(astrai::candidates_from_logits(std::vector<float>{1.0f, 2.0f, inf}),
                    Contains("token 2") && Contains("+inf"));
  CHECK_THROWS_WITH(astrai::candidates_from_logits(std::vector<float>{}), Contains("empty"));
  CHECK_THROWS_WITH(astrai::candidates_from_logits(std::vector<float>{-inf, -inf}), Contains("-inf"));
  // -inf alone is a mask, not an error.
  const astrai::Candidates c = astrai::candidates_from_logits(std::vector<float>{-inf, 0.5f, -inf});
  REQUIRE(c.size() == 1);
  CHECK(c[0].id == 1);
}

}  // namespace test_strategies
