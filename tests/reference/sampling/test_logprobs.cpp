// token_logprobs against a float64 log-softmax written here another way:
// log(p_i) of the oracle's softmax, and the top tokens by counting.
#include <cmath>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "reference/sampling/logprobs.h"
#include "tests/reference/sampling/sampling_generators.h"
#include "tests/reference/sampling/sampling_oracle.h"

TEST_CASE("logprobs are the log-softmax of the raw logits, top tokens more likely first", "[sampling][logprobs]") {
  rc::prop("within 1e-12 of log(softmax); the top n are the n tokens with fewer than n ahead", [] {
    const std::vector<float> logits = *astrai::test::gen_logits();
    const std::size_t n = logits.size();
    const int token = *rc::gen::inRange(0, int(n));
    const int top_n = *rc::gen::inRange(0, astrai::kMaxTopLogprobs + 1);
    std::vector<bool> finite(n);
    std::vector<double> z(n);
    for (std::size_t i = 0; i < n; ++i) {
      finite[i] = std::isfinite(logits[i]);
      z[i] = logits[i];
    }
    const std::vector<double> p = astrai::test::oracle_softmax(z, finite);
    const astrai::TokenLogprobs got = astrai::token_logprobs(logits, token, top_n);
    // Logits lie in [-20, 20], so p >= e^-40: no p underflows and log(p)'s
    // error is a few ulps of p's relative error (about 1e-15), far below 1e-12.
    if (finite[std::size_t(token)])
      RC_ASSERT(std::abs(got.logprob - std::log(p[std::size_t(token)])) <= 1e-12);
    else
      RC_ASSERT(got.logprob == -std::numeric_limits<double>::infinity());
    std::size_t n_finite = 0;
    for (bool f : finite) n_finite += f ? 1 : 0;
    RC_ASSERT(got.top.size() == std::min<std::size_t>(std::size_t(top_n), n_finite));
    for (std::size_t rank = 0; rank < got.top.size(); ++rank) {
      const std::size_t id = std::size_t(got.top[rank].token);
      RC_ASSERT(finite[id]);
      std::size_t ahead = 0;  // finite tokens more likely than id (larger logit, or equal and lower id)
      for (std::size_t j = 0; j < n; ++j) ahead += (finite[j] && astrai::test::ahead_of(z, j, id)) ? 1 : 0;
      RC_ASSERT(ahead == rank);
      RC_ASSERT(std::abs(got.top[rank].logprob - std::log(p[id])) <= 1e-12);
    }
  });
}

TEST_CASE("logprobs on a hand row, and the rows the sampler refuses", "[sampling][logprobs]") {
  // Four equal logits and a masked one: each log p is exactly -log 4 up to rounding.
  const std::vector<float> row = {1.0f, 1.0f, -std::numeric_limits<float>::infinity(), 1.0f, 1.0f};
  const astrai::TokenLogprobs lp = astrai::token_logprobs(row, 3, 5);
  CHECK(lp.logprob == Approx(-std::log(4.0)).epsilon(1e-15));
  REQUIRE(lp.top.size() == 4);  // only the finite tokens, ties by lower id
  CHECK(lp.top[0].token == 0);
  CHECK(lp.top[3].token == 4);
  CHECK(astrai::token_logprobs(row, 2, 0).logprob == -std::numeric_limits<double>::infinity());
  CHECK_THROWS_WITH(astrai::token_logprobs(std::vector<float>{1.0f, std::nanf("")}, 0, 1), Catch::Contains("NaN"));
  CHECK_THROWS_WITH(astrai::token_logprobs(row, 5, 1), Catch::Contains("outside"));
}
