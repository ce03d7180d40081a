// Penalties, logit bias and min-p against the float64 oracles written in the
// tests (penalty_oracle.h, sampling_oracle.h), and the per-request state that
// counts tokens for them.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "reference/sampling/penalties.h"
#include "reference/sampling/sampler.h"
#include "tests/reference/sampling/penalty_oracle.h"
#include "tests/reference/sampling/sampling_generators.h"
#include "tests/reference/sampling/sampling_oracle.h"

using astrai::SamplerState;
using astrai::SamplingParams;
using astrai::test::PenaltyCase;

// In a namespace of its own, TEST_CASEs too: the test program is a unity
// build (tests/meson.build), where other files have helpers of the same names.
namespace test_penalties {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Token ids in [0, n): a prompt or an output history.
rc::Gen<std::vector<int>> gen_history(int n, int max_len) {
  return rc::gen::mapcat(rc::gen::inRange(0, max_len + 1),
                         [n](int len) { return rc::gen::container<std::vector<int>>(len, rc::gen::inRange(0, n)); });
}

// Distinct ids in [0, n) with biases in [-100, 100] (-100, a ban, common).
rc::Gen<std::vector<std::pair<int, float>>> gen_bias(int n) {
  return rc::gen::map(rc::gen::container<std::vector<int>>(rc::gen::inRange(-101, 101)), [n](const std::vector<int>& raw) {
    std::vector<std::pair<int, float>> bias;
    for (std::size_t i = 0; i < raw.size() && int(i) < n; ++i)
      if (raw[i] % 3 == 0) bias.emplace_back(int(i), raw[i] <= -90 ? -100.0f : float(raw[i]) / 4.0f);
    return bias;
  });
}

// Penalties in [-2, 2] in steps of 1/steps, a repetition factor from the
// list, and a bias on the row's tokens.
PenaltyCase draw_case(int n, int steps, const std::vector<float>& repetitions) {
  PenaltyCase c;
  c.presence = float(*rc::gen::inRange(-2 * steps, 2 * steps + 1)) / float(steps);
  c.frequency = float(*rc::gen::inRange(-2 * steps, 2 * steps + 1)) / float(steps);
  c.repetition = *rc::gen::elementOf(repetitions);
  c.bias = *gen_bias(n);
  return c;
}

SamplingParams with_penalties(const PenaltyCase& c) {
  SamplingParams params;
  params.presence_penalty = c.presence;
  params.frequency_penalty = c.frequency;
  params.repetition_penalty = c.repetition;
  params.logit_bias = c.bias;
  return params;
}

// The reference's penalised row for this history.
std::vector<float> reference_penalized(std::span<const float> logits, std::span<const int> prompt,
                                       std::span<const int> generated, const SamplingParams& params) {
  astrai::TokenCounts counts(prompt);
  for (int t : generated) counts.add_generated(t);
  std::vector<float> row(logits.begin(), logits.end());
  astrai::apply_adjustments(row, astrai::logit_adjustments(params, counts), params.repetition_penalty);
  return row;
}


TEST_CASE("penalties and bias give the float64 oracle's logits", "[sampling][penalties]") {
  rc::prop("each logit within its rounding of the oracle's", [] {
    const std::vector<float> logits = *astrai::test::gen_logits();
    const int n = int(logits.size());
    const std::vector<int> prompt = *gen_history(n, 20), generated = *gen_history(n, 30);
    const PenaltyCase c = draw_case(n, 100, {1.0f, 1.3f, 0.7f, 2.0f, 0.05f});
    const std::vector<double> want = astrai::test::oracle_penalized(logits, prompt, generated, c);
    const std::vector<float> got = reference_penalized(logits, prompt, generated, with_penalties(c));
    for (std::size_t i = 0; i < got.size(); ++i) {
      RC_ASSERT(std::isinf(got[i]) == std::isinf(want[i]));
      if (std::isinf(want[i])) {
        RC_ASSERT(got[i] == float(want[i]));
        continue;
      }
      // The reference rounds five float64 operations (2^-53 relative each, on
      // terms of size at most S) in another association than the oracle, then
      // once to float (2^-24 of the result): |got - want| <= 2^-24 |want| + 8 * 2^-53 * S.
      const double r = double(c.repetition);
      const double s = std::abs(double(logits[i])) * std::max(r, 1.0 / r) + 100.0 +
                       2.0 * double(generated.size()) + 2.0;
      RC_ASSERT(std::abs(double(got[i]) - want[i]) <= 0x1p-24 * std::abs(want[i]) + 8.0 * 0x1p-53 * s);
    }
  });
}

TEST_CASE("penalties, bias, temperature, top-k, top-p and min-p compose in that order", "[sampling][penalties]") {
  rc::prop("probabilities() of the penalised row equal the float64 oracle with min-p", [] {
    const std::vector<float> logits = *astrai::test::gen_logits();
    const int n = int(logits.size());
    const std::vector<int> prompt = *gen_history(n, 10), generated = *gen_history(n, 10);
    const PenaltyCase c = draw_case(n, 4, {1.0f, 0.5f, 2.0f});
    SamplingParams params = with_penalties(c);
    params.temperature = *rc::gen::oneOf(rc::gen::just(0.0f), astrai::test::gen_temperature());
    params.top_k = *rc::gen::inRange(0, 70);
    params.top_p = *astrai::test::gen_top_p();
    params.min_p = *rc::gen::element(0.0f, 0.01f, 0.1f, 0.5f, 0.9f, 1.0f);
    const std::vector<float> row = reference_penalized(logits, prompt, generated, params);
    // Penalties and biases in quarters, repetition 1/2 or 2, logits floats
    // below 21 in magnitude: every float64 operation of either side is exact
    // (a float's 24 bits, from 2^4 down to at worst 2^-30 for 0.01, plus
    // quarters below 2^7 fit in 53 bits), so both hold the exact value and the
    // reference's one rounding to float gives float(exact): equal, not close.
    const std::vector<double> exact = astrai::test::oracle_penalized(logits, prompt, generated, c);
    for (std::size_t i = 0; i < row.size(); ++i) RC_ASSERT(row[i] == static_cast<float>(exact[i]));
    bool any_finite = false;
    for (float l : row) any_finite = any_finite || std::isfinite(l);
    RC_PRE(any_finite);  // every token banned: the sampler refuses the row (a hand case below)
    const std::vector<double> want =
        astrai::test::expected_distribution(row, params.temperature, params.top_k, params.top_p, params.min_p);
    const std::vector<double> got = astrai::probabilities(row, params);
    for (std::size_t i = 0; i < got.size(); ++i) {
      RC_ASSERT((got[i] > 0.0) == (want[i] > 0.0));  // the same support, exactly
      RC_ASSERT(std::abs(got[i] - want[i]) <= 1e-12);
    }
  });
}

TEST_CASE("a request's sampler counts its own tokens for the penalties", "[sampling][penalties]") {
  rc::prop("SamplerState::next equals a loop that penalises with the oracle from the history", [] {
    const std::vector<float> logits = *astrai::test::gen_logits(24);
    const int n = int(logits.size());
    const std::vector<int> prompt = *rc::gen::nonEmpty(gen_history(n, 8));
    PenaltyCase c;
    c.presence = float(*rc::gen::inRange(0, 9)) / 4.0f;
    c.frequency = float(*rc::gen::inRange(0, 9)) / 4.0f;
    c.repetition = *rc::gen::element(1.0f, 2.0f);
    SamplingParams params = with_penalties(c);
    params.temperature = *rc::gen::element(0.0f, 0.5f, 1.0f);
    params.seed = *rc::gen::arbitrary<std::uint64_t>();
    SamplerState state(params, prompt);
    astrai::Rng rng(*params.seed);
    std::vector<int> generated;
    for (int step = 0; step < 12; ++step) {
      // Exact, as in the case above: the oracle's float64 row is exact, and
      // one rounding to float gives the reference's row.
      const std::vector<double> z = astrai::test::oracle_penalized(logits, prompt, generated, c);
      const std::vector<float> row(z.begin(), z.end());
      const int want = astrai::sample_with_uniform(row, params, rng.next_uniform());
      const int got = state.next(logits);
      RC_ASSERT(got == want);
      generated.push_back(got);
    }
  });
}

TEST_CASE("the penalty rules on hand-made rows", "[sampling][penalties]") {
  const std::vector<float> logits = {2.0f, -2.0f, 1.0f, 0.5f, 3.0f};
  SECTION("repetition divides a positive logit and multiplies a negative one, prompt and output alike") {
    SamplingParams params;
    params.repetition_penalty = 2.0f;
    const std::vector<int> prompt = {0}, generated = {1};
    CHECK(reference_penalized(logits, prompt, generated, params) == std::vector<float>{1.0f, -4.0f, 1.0f, 0.5f, 3.0f});
  }
  SECTION("presence once per token seen in the output, frequency once per time; the prompt does not count") {
    SamplingParams params;
    params.presence_penalty = 0.5f;
    params.frequency_penalty = 0.25f;
    const std::vector<int> prompt = {3}, generated = {4, 4, 4, 2};
    CHECK(reference_penalized(logits, prompt, generated, params) ==
          std::vector<float>{2.0f, -2.0f, 0.25f, 0.5f, 3.0f - 0.5f - 0.75f});
  }
  SECTION("a bias adds; -100 bans even the largest logit") {
    SamplingParams params;
    params.logit_bias = {{0, 1.5f}, {4, -100.0f}};
    const std::vector<float> row = reference_penalized(logits, {}, {}, params);
    CHECK(row == std::vector<float>{3.5f, -2.0f, 1.0f, 0.5f, -kInf});
    params.temperature = 0.0f;
    CHECK(astrai::sample_with_uniform(row, params, 0.0) == 0);
  }
  SECTION("every token banned: the sampler refuses the row") {
    SamplingParams params;
    for (int i = 0; i < 5; ++i) params.logit_bias.emplace_back(i, -100.0f);
    const std::vector<float> row = reference_penalized(logits, {}, {}, params);
    CHECK_THROWS_WITH(astrai::sample_with_uniform(row, params, 0.5), Catch::Contains("every one of the 5 logits is -inf"));
  }
  SECTION("a bias on a token outside the row is refused, not written") {
    SamplingParams params;
    params.logit_bias = {{5, 1.0f}};
    std::vector<float> row = logits;
    CHECK_THROWS_WITH(astrai::apply_adjustments(row, astrai::logit_adjustments(params, {}), 1.0f),
                      Catch::Contains("logit_bias token id 5 is outside the vocabulary of 5"));
    CHECK_THROWS_WITH(params.validate(5), Catch::Contains("logit_bias token id 5"));
    CHECK_NOTHROW(params.validate(6));
  }
}

TEST_CASE("min-p keeps the tokens at least min_p times as likely as the top one", "[sampling][min_p]") {
  // Weights exp(l - 3): 1, e^-1 = 0.368, e^-2 = 0.135, e^-3 = 0.050, none near 0.3 or 0.1.
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 0.0f};
  SamplingParams params;
  params.top_k = 0;
  params.min_p = 0.3f;
  CHECK(astrai::kept_candidates(logits, params).size() == 2);  // ids 1, 2
  params.min_p = 0.1f;
  CHECK(astrai::kept_candidates(logits, params).size() == 3);
  params.min_p = 1.0f;  // only the top (and its ties)
  CHECK(astrai::kept_candidates(logits, params).size() == 1);
  params.temperature = 2.0f;  // tempered weights exp((l - 3) / 2): 1, 0.61, 0.37, 0.22
  params.min_p = 0.3f;
  CHECK(astrai::kept_candidates(logits, params).size() == 3);
}

TEST_CASE("bad penalty, bias and min-p values are refused naming the field", "[sampling][penalties]") {
  const auto refused = [](auto change, const char* field) {
    SamplingParams params;
    change(params);
    CHECK_THROWS_WITH(params.validate(), Catch::Contains(field));
  };
  refused([](SamplingParams& p) { p.min_p = -0.1f; }, "min_p");
  refused([](SamplingParams& p) { p.min_p = 1.5f; }, "min_p");
  refused([](SamplingParams& p) { p.min_p = std::nanf(""); }, "min_p");
  refused([](SamplingParams& p) { p.presence_penalty = 2.5f; }, "presence_penalty");
  refused([](SamplingParams& p) { p.frequency_penalty = -2.5f; }, "frequency_penalty");
  refused([](SamplingParams& p) { p.repetition_penalty = 0.0f; }, "repetition_penalty");
  refused([](SamplingParams& p) { p.repetition_penalty = kInf; }, "repetition_penalty");
  refused([](SamplingParams& p) { p.logit_bias = {{-1, 1.0f}}; }, "logit_bias token id");
  refused([](SamplingParams& p) { p.logit_bias = {{3, 101.0f}}; }, "logit_bias value");
  refused([](SamplingParams& p) { p.logit_bias = {{3, 1.0f}, {3, 2.0f}}; }, "logit_bias names token 3 twice");
  SamplingParams edges;
  edges.min_p = 1.0f;
  edges.presence_penalty = -2.0f;
  edges.frequency_penalty = 2.0f;
  edges.logit_bias = {{0, -100.0f}, {1, 100.0f}};
  CHECK_NOTHROW(edges.validate());
}

TEST_CASE("the incremental adjustment list equals the one rebuilt from the counts", "[sampling][penalties]") {
  rc::prop("after each generated token, the same adjustments (as a set of tokens)", [] {
    const int n = *rc::gen::inRange(1, 40);
    const std::vector<int> prompt = *gen_history(n, 15), generated = *gen_history(n, 25);
    SamplingParams params;
    params.presence_penalty = *rc::gen::element(0.0f, 0.5f, -1.0f);
    params.frequency_penalty = *rc::gen::element(0.0f, 0.25f);
    params.repetition_penalty = *rc::gen::element(1.0f, 1.5f);
    params.logit_bias = *gen_bias(n);
    astrai::AdjustmentList list(params, prompt);
    astrai::TokenCounts counts(prompt);
    const auto sorted = [](std::span<const astrai::LogitAdjustment> a) {
      std::vector<astrai::LogitAdjustment> v(a.begin(), a.end());
      std::sort(v.begin(), v.end(), [](const auto& x, const auto& y) { return x.token < y.token; });
      return v;
    };
    for (std::size_t step = 0; step <= generated.size(); ++step) {
      const auto got = sorted(list.adjustments());
      const auto want = sorted(astrai::logit_adjustments(params, counts));
      RC_ASSERT(got.size() == want.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        RC_ASSERT(got[i].token == want[i].token);
        RC_ASSERT(got[i].banned == want[i].banned);
        RC_ASSERT(got[i].repetition == want[i].repetition);
        RC_ASSERT(got[i].offset == want[i].offset);  // the same expression on the same numbers
      }
      if (step == generated.size()) break;
      list.add_generated(generated[step]);
      counts.add_generated(generated[step]);
    }
  });
}

}  // namespace test_penalties
