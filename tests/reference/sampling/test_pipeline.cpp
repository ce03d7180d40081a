// The composed pipeline against the float64 oracle, the draw, and the
// per-request seeding guarantees.
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <vector>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "reference/sampling/sampler.h"
#include "tests/reference/sampling/sampling_generators.h"
#include "tests/reference/sampling/sampling_oracle.h"

using astrai::Rng;
using astrai::SamplerState;
using astrai::SamplingParams;

namespace {

// A fixed row of 32 logits in [-4, 4) for the seeding tests.
std::vector<float> fixed_logits(int n = 32) {
  std::vector<float> logits(n);
  Rng rng(99);
  for (float& l : logits) l = static_cast<float>(8.0 * rng.next_uniform() - 4.0);
  return logits;
}

std::vector<int> draws(SamplerState& state, const std::vector<float>& logits, int n) {
  std::vector<int> tokens(n);
  for (int& t : tokens) t = state.next(logits);
  return tokens;
}

}  // namespace

TEST_CASE("the pipeline's distribution follows temperature -> top-k -> top-p -> softmax", "[sampling][pipeline]") {
  rc::prop("probabilities() equal the float64 oracle; sample() draws from its support", [] {
    const std::vector<float> logits = *astrai::test::gen_logits();
    const float temperature = *rc::gen::oneOf(rc::gen::just(0.0f), astrai::test::gen_temperature(),
                                              astrai::test::gen_temperature());
    const int top_k = *rc::gen::inRange(0, 70);
    const float top_p = *astrai::test::gen_top_p();
    const SamplingParams params{temperature, top_k, top_p, std::nullopt};
    const std::vector<double> want = astrai::test::expected_distribution(logits, temperature, top_k, top_p);
    const std::vector<double> got = astrai::probabilities(logits, params);
    RC_ASSERT(got.size() == logits.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      RC_ASSERT((got[i] > 0.0) == (want[i] > 0.0));  // the same support, exactly
      RC_ASSERT(std::abs(got[i] - want[i]) <= 1e-12);
    }
    Rng rng(*rc::gen::arbitrary<std::uint64_t>());
    for (int d = 0; d < 5; ++d) RC_ASSERT(want[std::size_t(astrai::sample(logits, params, rng))] > 0.0);
  });
}

TEST_CASE("the order matters: top-p sees the tempered distribution", "[sampling][pipeline]") {
  // Probabilities at T = 1 are ~ {0.665, 0.245, 0.090}: p = 0.8 keeps 2 tokens.
  // At T = 0.25 the first has ~0.98 of the mass: p = 0.8 keeps 1.
  const std::vector<float> logits = {2.0f, 1.0f, 0.0f};
  const auto support = [&](float t) {
    int n = 0;
    for (double p : astrai::probabilities(logits, SamplingParams{t, 0, 0.8f, std::nullopt})) n += p > 0.0;
    return n;
  };
  CHECK(support(1.0f) == 2);
  CHECK(support(0.25f) == 1);
}

TEST_CASE("greedy sampling returns llama2.c's argmax and still consumes one draw", "[sampling][pipeline]") {
  const std::vector<float> logits = {1.0f, 3.0f, -2.0f, 3.0f, 0.5f};
  const SamplingParams greedy{0.0f, 50, 1.0f, 5};
  Rng rng(5), reference(5);
  CHECK(astrai::sample(logits, greedy, rng) == 1);  // the first of the tied maxima
  reference.next_u64();
  CHECK(rng.state() == reference.state());  // the n-th token uses the n-th output, greedy or not
  CHECK(astrai::describe_sampling(greedy) == "top_k(1)");
  // A tiny temperature samples the argmax too (the others have probability ~exp(-10^4)).
  SamplerState cold(SamplingParams{1e-4f, 0, 1.0f, 11});
  const std::vector<float> separated = {0.0f, 2.0f, 1.0f, -3.0f};
  for (int t : draws(cold, separated, 50)) CHECK(t == 1);
}

TEST_CASE("a seed fixes the tokens whatever else runs", "[sampling][seed]") {
  const std::vector<float> logits = fixed_logits();
  const SamplingParams seeded{0.9f, 20, 0.95f, 1234};
  SamplerState alone(seeded);
  const std::vector<int> expected = draws(alone, logits, 300);

  // The same seed again, now interleaved with two other requests, one of
  // them with the same params and another seed.
  SamplerState again(seeded), other(SamplingParams{1.3f, 0, 0.7f, 77}), unseeded(SamplingParams{});
  const std::vector<float> other_logits = fixed_logits(100);
  std::vector<int> got;
  for (int i = 0; i < 300; ++i) {
    other.next(other_logits);
    got.push_back(again.next(logits));
    unseeded.next(other_logits);
    unseeded.next(other_logits);
  }
  CHECK(got == expected);
  // The one-shot shortcut is the first token of such a request.
  CHECK(astrai::sample(logits, seeded) == expected[0]);
}

TEST_CASE("different seeds give statistically different sequences", "[sampling][seed]") {
  // 32 equally likely tokens: two independent sequences agree at a position
  // with probability 1/32, so 1000 positions agree ~31 times (sd 5.5). Fewer
  // than 80 (8.8 sd) agreements is the check; identical sequences would give 1000.
  const std::vector<float> uniform(32, 0.0f);
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    SamplerState a(SamplingParams{1.0f, 0, 1.0f, seed}), b(SamplingParams{1.0f, 0, 1.0f, seed + 1000});
    const std::vector<int> x = draws(a, uniform, 1000), y = draws(b, uniform, 1000);
    int agree = 0;
    for (int i = 0; i < 1000; ++i) agree += x[i] == y[i];
    CHECK(agree < 80);
  }
}

TEST_CASE("an unseeded request reports the seed it drew, which replays it", "[sampling][seed]") {
  const std::vector<float> logits = fixed_logits();
  SamplerState first(SamplingParams{});
  SamplingParams replay;
  replay.seed = first.seed();
  SamplerState second(replay);
  CHECK(draws(first, logits, 100) == draws(second, logits, 100));
}

TEST_CASE("inverse_cdf picks the first index whose running sum passes u", "[sampling][draw]") {
  const std::vector<double> p = {0.25, 0.0, 0.5, 0.25};
  CHECK(astrai::inverse_cdf(p, 0.0) == 0);
  CHECK(astrai::inverse_cdf(p, 0.2499) == 0);
  CHECK(astrai::inverse_cdf(p, 0.25) == 2);  // the zero-probability token 1 is skipped
  CHECK(astrai::inverse_cdf(p, 0.7499) == 2);
  CHECK(astrai::inverse_cdf(p, 0.75) == 3);
  CHECK(astrai::inverse_cdf(p, 1.0 - 0x1.0p-53) == 3);
  const std::vector<double> trailing_zero = {0.0, 1.0, 0.0};
  CHECK(astrai::inverse_cdf(trailing_zero, 0.0) == 1);
  CHECK(astrai::inverse_cdf(trailing_zero, 1.0 - 0x1.0p-53) == 1);
  CHECK_THROWS_AS(astrai::inverse_cdf(p, 1.0), std::invalid_argument);
  CHECK_THROWS_AS(astrai::inverse_cdf(p, -0.5), std::invalid_argument);
  CHECK_THROWS_AS(astrai::inverse_cdf(std::vector<double>{}, 0.5), std::invalid_argument);
  CHECK_THROWS_AS(astrai::inverse_cdf(std::vector<double>{0.0, 0.0}, 0.5), std::invalid_argument);
}

TEST_CASE("invalid sampling parameters throw std::invalid_argument naming the field", "[sampling][errors]") {
  using Catch::Matchers::Contains;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> logits = {0.0f, 1.0f};
  const auto rejects = [&](SamplingParams params, const char* field) {
    CHECK_THROWS_WITH(params.validate(), Contains(field));
    CHECK_THROWS_AS(SamplerState(params), std::invalid_argument);
    CHECK_THROWS_AS(astrai::sample(logits, params), std::invalid_argument);
  };
  rejects(SamplingParams{-0.5f, 50, 1.0f, 1}, "temperature");
  rejects(SamplingParams{nan, 50, 1.0f, 1}, "temperature");
  rejects(SamplingParams{inf, 50, 1.0f, 1}, "temperature");
  rejects(SamplingParams{1.0f, -1, 1.0f, 1}, "top_k");
  rejects(SamplingParams{1.0f, 50, 0.0f, 1}, "top_p");
  rejects(SamplingParams{1.0f, 50, -0.1f, 1}, "top_p");
  rejects(SamplingParams{1.0f, 50, 1.01f, 1}, "top_p");
  rejects(SamplingParams{1.0f, 50, nan, 1}, "top_p");
  CHECK_NOTHROW(SamplingParams{}.validate());

  SamplerState state(SamplingParams{0.7f, 0, 1.0f, 3});
  CHECK_THROWS_WITH(state.next(std::vector<float>{0.0f, nan}), Contains("NaN"));
  CHECK_THROWS_WITH(astrai::probabilities(std::vector<float>{nan}, SamplingParams{}), Contains("NaN"));
}

TEST_CASE("defaults follow the API", "[sampling][params]") {
  const SamplingParams params;
  CHECK(params.temperature == 1.0f);
  CHECK(params.top_k == 50);
  CHECK(params.top_p == 1.0f);
  CHECK_FALSE(params.seed.has_value());
  CHECK(astrai::describe_sampling(params) == "temperature(1.000000) -> top_k(50) -> top_p(1.000000)");
}
