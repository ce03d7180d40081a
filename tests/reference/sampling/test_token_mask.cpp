// The token mask in the sampler (reference/sampling/token_mask.h): a masked
// token is never a candidate, an all-allowing mask changes nothing, and the
// rules (ties, top-k, top-p, min-p) run over the allowed tokens alone.
//
// The independent statement used below: sampling a row under a mask is
// sampling the row of the allowed tokens alone, compacted (their logits in
// id order, nothing else), and mapping the drawn index back to its id. The
// compacted row is built without -inf and without the mask code, and the
// equality is exact: every rule of sampler.h depends only on the candidates'
// logits and their relative id order (ties to the lower id, the draw in
// ascending id order), which compaction keeps, and the sums run over the same
// values in the same order.
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <vector>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "engine/executor/executor.h"
#include "reference/sampling/logprobs.h"
#include "reference/sampling/sampler.h"
#include "reference/sampling/token_mask.h"
#include "tests/reference/sampling/sampling_generators.h"

using astrai::SamplingParams;

namespace {

constexpr float kMasked = -std::numeric_limits<float>::infinity();

// Parameters over every rule: greedy or tempered, any top-k, top-p and min-p.
SamplingParams gen_params() {
  SamplingParams params;
  params.temperature = *rc::gen::oneOf(rc::gen::just(0.0f), astrai::test::gen_temperature());
  params.top_k = *rc::gen::inRange(0, 70);
  params.top_p = *astrai::test::gen_top_p();
  params.min_p = *rc::gen::oneOf(rc::gen::just(0.0f), rc::gen::map(rc::gen::inRange(0, 101), [](int i) {
                                   return static_cast<float>(i) / 100.0f;
                                 }));
  return params;
}

// A mask of `allowed` (one flag per token), with random bits past the end of
// the vocabulary, which must not matter.
std::vector<std::uint32_t> mask_of(const std::vector<bool>& allowed, std::uint32_t tail_bits) {
  std::vector<std::uint32_t> mask(astrai::token_mask_words(allowed.size()), 0u);
  for (std::size_t t = 0; t < allowed.size(); ++t)
    if (allowed[t]) mask[t / 32] |= 1u << (t % 32);
  if (allowed.size() % 32 != 0) mask.back() |= tail_bits & ~((1u << (allowed.size() % 32)) - 1u);
  return mask;
}

double gen_uniform() { return double(*rc::gen::inRange(0, 1 << 30)) / double(1 << 30); }

}  // namespace

TEST_CASE("a mask that allows every token changes nothing", "[sampling][mask]") {
  rc::prop("sample_with_uniform with an all-allowing mask equals it without one", [] {
    const std::vector<float> logits = *astrai::test::gen_logits(200);
    const SamplingParams params = gen_params();
    const double u = gen_uniform();
    const std::vector<std::uint32_t> mask =
        mask_of(std::vector<bool>(logits.size(), true), *rc::gen::arbitrary<std::uint32_t>());
    RC_ASSERT(astrai::sample_with_uniform(logits, params, u, mask) == astrai::sample_with_uniform(logits, params, u));
  });
}

TEST_CASE("under a mask the sampler samples the allowed tokens alone", "[sampling][mask]") {
  rc::prop("the masked draw is the draw from the compacted row of allowed tokens, and is allowed", [] {
    const std::vector<float> logits = *astrai::test::gen_logits(200);
    std::vector<bool> allowed(logits.size());
    for (std::size_t t = 0; t < allowed.size(); ++t) allowed[t] = *rc::gen::inRange(0, 4) != 0;
    // At least one finite logit allowed (token 0's is always finite), so the row can be sampled.
    const std::size_t sure = *rc::gen::inRange<std::size_t>(0, logits.size());
    allowed[logits[sure] == kMasked ? 0 : sure] = true;
    // The compacted row: the allowed tokens' logits in id order.
    std::vector<float> compact;
    std::vector<int> ids;
    for (std::size_t t = 0; t < logits.size(); ++t)
      if (allowed[t]) {
        compact.push_back(logits[t]);
        ids.push_back(int(t));
      }
    const SamplingParams params = gen_params();
    const double u = gen_uniform();
    const std::vector<std::uint32_t> mask = mask_of(allowed, *rc::gen::arbitrary<std::uint32_t>());
    const int got = astrai::sample_with_uniform(logits, params, u, mask);
    RC_ASSERT(allowed[std::size_t(got)]);
    RC_ASSERT(got == ids[std::size_t(astrai::sample_with_uniform(compact, params, u))]);
  });
}

TEST_CASE("the tie rule holds among the allowed tokens", "[sampling][mask]") {
  // Tokens 1, 3 and 4 tie at the maximum; 1 is masked: greedy takes 3, the
  // lowest allowed id among the tied maxima, as keep_top_k(1) would.
  const std::vector<float> logits = {0.0f, 5.0f, 1.0f, 5.0f, 5.0f, 2.0f};
  const std::vector<std::uint32_t> mask = {0b111101u};
  CHECK(astrai::sample_with_uniform(logits, SamplingParams{0.0f, 0, 1.0f, std::nullopt}, 0.5, mask) == 3);
  // top_k 1 at temperature 1: the same token.
  CHECK(astrai::sample_with_uniform(logits, SamplingParams{1.0f, 1, 1.0f, std::nullopt}, 0.99, mask) == 3);
}

TEST_CASE("masked logits are never an error, unmasked bad ones still are", "[sampling][mask]") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> logits = {nan, inf, 1.0f, 2.0f};
  const SamplingParams params{1.0f, 0, 1.0f, std::nullopt};
  const std::vector<std::uint32_t> only_2_and_3 = {0b1100u};
  for (double u : {0.0, 0.5, 0.999}) {
    const int token = astrai::sample_with_uniform(logits, params, u, only_2_and_3);
    CHECK((token == 2 || token == 3));
  }
  CHECK_THROWS_AS(astrai::sample_with_uniform(logits, params, 0.5, std::vector<std::uint32_t>{0b1101u}),
                  std::invalid_argument);  // the NaN is allowed
  CHECK_THROWS_AS(astrai::sample_with_uniform(logits, params, 0.5, std::vector<std::uint32_t>{0u}),
                  std::invalid_argument);  // nothing allowed: nothing to sample
}

TEST_CASE("a mask of the wrong size is refused", "[sampling][mask]") {
  const std::vector<float> logits(33, 0.0f);  // 33 tokens: two words
  CHECK_THROWS_AS(astrai::sample_with_uniform(logits, SamplingParams{}, 0.5, std::vector<std::uint32_t>{~0u}),
                  std::invalid_argument);
  CHECK(astrai::sample_with_uniform(logits, SamplingParams{}, 0.5, std::vector<std::uint32_t>{0u, 1u}) == 32);
}

TEST_CASE("allowed_tokens counts the bits inside the vocabulary", "[sampling][mask]") {
  CHECK(astrai::allowed_tokens(std::vector<std::uint32_t>{~0u, ~0u}, 40) == 40);
  CHECK(astrai::allowed_tokens(std::vector<std::uint32_t>{0u, 1u << 7}, 40) == 1);
  CHECK(astrai::allowed_tokens(std::vector<std::uint32_t>{0u, 1u << 8}, 40) == 0);  // token 40: outside
  CHECK(astrai::allowed_tokens(std::vector<std::uint32_t>{1u}, 32) == 1);
}

TEST_CASE("sample_rows applies the mask to the draw, never to the logprobs", "[sampling][mask]") {
  rc::prop("the token is the masked draw; its logprobs are the raw row's", [] {
    const std::vector<float> logits = *astrai::test::gen_logits(100);
    std::vector<bool> allowed(logits.size());
    for (std::size_t t = 0; t < allowed.size(); ++t) allowed[t] = *rc::gen::inRange(0, 3) != 0;
    allowed[0] = true;  // token 0 is always finite (gen_logits), so the row can be sampled
    const std::vector<std::uint32_t> mask = mask_of(allowed, 0u);
    astrai::RowSampling row;
    row.params = gen_params();
    row.uniform = gen_uniform();
    row.mask = mask;
    row.logprobs = *rc::gen::inRange(0, 6);
    const std::vector<astrai::SampledToken> got = astrai::sample_rows(logits, logits.size(), std::span(&row, 1));
    RC_ASSERT(got.front().error.empty());
    const int token = got.front().token;
    RC_ASSERT(token == astrai::sample_with_uniform(logits, row.params, row.uniform, mask));
    const astrai::TokenLogprobs want = astrai::token_logprobs(logits, token, row.logprobs);
    RC_ASSERT(got.front().logprobs.has_value());
    RC_ASSERT(got.front().logprobs->logprob == want.logprob);  // the same function on the same raw row
    RC_ASSERT(got.front().logprobs->top.size() == want.top.size());
  });
}
