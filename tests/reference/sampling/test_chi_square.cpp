// Goodness of fit of the draws: Pearson's chi-square statistic of 100000
// seeded draws against the expected distribution, computed in float64 by the
// test's own oracle (sampling_oracle.h), not by the code under test.
//
// Critical values of chi-square at significance 0.001 (upper tail) for
// 1..10 degrees of freedom, from the NIST/SEMATECH e-Handbook of Statistical
// Methods, section 1.3.6.7.4 "Critical Values of the Chi-Square Distribution"
// (and recomputed here by bisection on the regularized incomplete gamma
// function, to 3 decimals).
#include <array>
#include <cmath>
#include <vector>

#include <catch2/catch.hpp>

#include "reference/sampling/sampler.h"
#include "tests/reference/sampling/sampling_oracle.h"

namespace {

constexpr std::array<double, 11> kChiSquare999 = {0.0,    10.828, 13.816, 16.266, 18.467, 20.515,
                                                  22.458, 24.322, 26.124, 27.877, 29.588};
constexpr int kDraws = 100000;

struct FitResult {
  double statistic = 0.0;
  int degrees_of_freedom = 0;
  int draws_outside_support = 0;
};

// Draws kDraws tokens with the given params and compares the counts with
// kDraws * expected over the tokens of nonzero expected probability.
FitResult chi_square_fit(const std::vector<float>& logits, const astrai::SamplingParams& params) {
  const std::vector<double> expected =
      astrai::test::expected_distribution(logits, params.temperature, params.top_k, params.top_p);
  std::vector<int> counts(logits.size(), 0);
  astrai::SamplerState state(params);
  for (int i = 0; i < kDraws; ++i) ++counts[state.next(logits)];
  FitResult fit;
  int categories = 0;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    if (expected[i] == 0.0) {
      fit.draws_outside_support += counts[i];
      continue;
    }
    const double e = kDraws * expected[i];
    REQUIRE(e >= 5.0);  // the usual validity condition of the chi-square approximation
    fit.statistic += (counts[i] - e) * (counts[i] - e) / e;
    ++categories;
  }
  fit.degrees_of_freedom = categories - 1;  // the counts sum to kDraws: one constraint
  return fit;
}

}  // namespace

TEST_CASE("softmax + multinomial: 8 categories fit at significance 0.001", "[sampling][chi_square]") {
  // Target probabilities 0.30 0.20 0.15 0.12 0.10 0.07 0.04 0.02 as logits
  // log(p); the oracle softmaxes the float logits itself.
  const std::vector<double> target = {0.30, 0.20, 0.15, 0.12, 0.10, 0.07, 0.04, 0.02};
  std::vector<float> logits;
  for (double p : target) logits.push_back(static_cast<float>(std::log(p)));
  const FitResult fit = chi_square_fit(logits, astrai::SamplingParams{1.0f, 0, 1.0f, 20240611});
  REQUIRE(fit.degrees_of_freedom == 7);
  INFO("chi-square = " << fit.statistic << ", critical value (df 7, 0.001) = " << kChiSquare999[7]);
  CHECK(fit.statistic < kChiSquare999[7]);
  CHECK(fit.draws_outside_support == 0);
}

TEST_CASE("temperature + top-k + top-p: the kept tokens fit at significance 0.001", "[sampling][chi_square]") {
  // 12 tokens; T = 0.8, then top-k 6 keeps 4, 0, 7, 1 and two of the three
  // tokens tied at 0.6 (3 and 6; 10 goes, the higher id), then top-p 0.9 over
  // those six (tempered masses ~.437 .206 .125 .098 .067 .067, running sum
  // reaching .933 at token 3) keeps five: 4, 0, 7, 1, 3, where the tie between
  // 3 and 6 again goes to the lower id. The oracle decides which stay; the
  // support size 5 (df 4) is asserted so that a change is noticed.
  const std::vector<float> logits = {1.5f, 0.9f, -0.3f, 0.6f, 2.1f, -1.0f, 0.6f, 1.1f, -2.0f, 0.4f, 0.6f, -0.7f};
  const astrai::SamplingParams params{0.8f, 6, 0.9f, 987654321};
  const std::vector<double> expected = astrai::test::expected_distribution(logits, 0.8f, 6, 0.9f);
  for (int id : {4, 0, 7, 1, 3}) CHECK(expected[id] > 0.0);
  int support = 0;
  for (double p : expected) support += p > 0.0;
  REQUIRE(support == 5);
  const FitResult fit = chi_square_fit(logits, params);
  REQUIRE(fit.degrees_of_freedom == 4);
  INFO("chi-square = " << fit.statistic << ", critical value (df 4, 0.001) = " << kChiSquare999[4]);
  CHECK(fit.statistic < kChiSquare999[4]);
  CHECK(fit.draws_outside_support == 0);
}
