// Penalties, logit bias, min_p and logprobs on the device (adjust_logits.cu,
// sample.cu's min-p step, row_logprobs.cu, through DeviceSampler) against the
// reference on the host (sample_rows: penalties.h, sampler.h, logprobs.h).
//
// Exactness: the adjustment kernel does adjusted_logit()'s IEEE float64
// operations (with the rounding intrinsics, so nothing is fused) and the
// sampler's float64 steps are the reference's, with the host's exp() in the
// emulated build: tokens must be EQUAL. Logprobs sum exp() over the row in
// the block's order, not in id order: their values are compared within the
// bound of two orders of one float64 sum (below); the listed tokens involve
// no rounding and must be equal.
#include <cmath>
#include <limits>
#include <random>

#include <catch2/catch.hpp>
#include <xtensor/xtensor.hpp>

#include "cuda/device_sampler.h"
#include "cuda/kernel_cases/sampling_rows.h"
#include "reference/sampling/penalties.h"
#include "reference/sampling/sampler.h"
#include "tests/cuda/gpu_test_support.h"

using namespace astrai;

namespace {

// Rows with their rules; the adjustment lists live here (RowSampling holds a view).
struct Batch {
  int vocab = 0;
  std::vector<float> logits = {};
  std::vector<AdjustmentList> lists = {};
  std::vector<RowSampling> rules = {};
  xt::xtensor<float, 2> host() const {
    xt::xtensor<float, 2> m({rules.size(), size_t(vocab)});
    std::copy(logits.begin(), logits.end(), m.begin());
    return m;
  }
};

// A rule with penalties from a random history (prompt and output ids in the
// vocabulary), a bias on a few tokens (some banned), min_p and logprobs drawn.
void add_row(Batch& b, std::mt19937& rng, bool penalised, int logprobs) {
  auto pick = [&](auto first, auto... rest) {
    const std::vector<decltype(first)> v = {first, rest...};
    return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
  };
  std::uniform_int_distribution<int> id(0, b.vocab - 1);
  const std::vector<float> row = cuda::cases::random_logit_row(b.vocab, rng, false);
  b.logits.insert(b.logits.end(), row.begin(), row.end());
  RowSampling r;
  r.params.temperature = pick(0.0f, 0.7f, 1.3f);
  r.params.top_k = pick(1, 2, 50, cuda::kSampleMaxKept);
  r.params.top_p = pick(1.0f, 0.9f, 0.5f);
  r.params.min_p = pick(0.0f, 0.05f, 0.3f, 1.0f);
  r.uniform = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  r.logprobs = logprobs;
  std::vector<int> prompt, generated;
  if (penalised) {
    r.params.presence_penalty = pick(0.0f, 0.5f, -1.5f);
    r.params.frequency_penalty = pick(0.0f, 0.25f, 2.0f);
    r.params.repetition_penalty = pick(1.0f, 1.3f, 0.6f);
    for (int i = std::min(b.vocab, 3); i > 0; --i) {
      const int token = id(rng);
      bool taken = false;
      for (const auto& e : r.params.logit_bias) taken = taken || e.first == token;
      if (!taken) r.params.logit_bias.emplace_back(token, pick(-100.0f, 3.5f, -2.25f));
    }
    for (int i = 0; i < 12; ++i) prompt.push_back(id(rng));
    for (int i = 0; i < 20; ++i) generated.push_back(id(rng));
  }
  AdjustmentList& list = b.lists.emplace_back(r.params, prompt);
  for (int t : generated) list.add_generated(t);
  b.rules.push_back(r);
}

// Views into the lists, taken once every list is in place (the vector no longer moves).
void bind_views(Batch& b) {
  for (size_t i = 0; i < b.rules.size(); ++i) b.rules[i].adjustments = b.lists[i].adjustments();
}

std::vector<SampledToken> on_device(cuda::DeviceSampler& sampler, const Batch& b, int& host_rows) {
  const cuda::DeviceBuffer d = test::upload(b.logits, cuda::DType::Float32);
  auto tokens = sampler.sample(d.as<float>(), b.vocab, b.rules, nullptr);
  host_rows = sampler.last_host_rows();
  return tokens;
}

}  // namespace

TEST_CASE("device penalties, bias and min_p give the reference's tokens, sampled on the device",
          "[cuda][penalties]") {
  ASTRAI_REQUIRE_GPU();
  std::mt19937 rng(20261201);
  cuda::DeviceSampler sampler;
  int changed = 0, compared = 0;
  for (const int vocab : {1, 65, 1000, 2049, 8193, 40000}) {
    Batch b{vocab};
    for (int i = 0; i < 24; ++i) add_row(b, rng, i % 4 != 0, -1);
    bind_views(b);
    int host_rows = -1;
    const auto got = on_device(sampler, b, host_rows);
    const auto want = sample_rows(b.host(), b.rules);
    int errors = 0;
    for (size_t r = 0; r < got.size(); ++r) {
      INFO("vocabulary " << vocab << ", row " << r << ": " << describe_sampling(b.rules[r].params));
      CHECK(got[r].token == want[r].token);
      CHECK(got[r].error == want[r].error);
      errors += want[r].error.empty() ? 0 : 1;
      ++compared;
    }
    // Only rows the reference refuses (a penalty pushing a huge logit to
    // +inf, every logit banned or masked) go to the host: the rest were
    // adjusted and sampled on the device.
    CHECK(host_rows == errors);
    // The premise that makes this bite: the adjustments change tokens.
    std::vector<RowSampling> plain(b.rules.begin(), b.rules.end());
    for (auto& p : plain) p.adjustments = {};
    const auto unadjusted = sample_rows(b.host(), plain);
    for (size_t r = 0; r < got.size(); ++r) changed += unadjusted[r].token != want[r].token ? 1 : 0;
  }
  INFO(changed << " of " << compared << " rows change their token with the adjustments");
  CHECK(changed * 5 > compared);
}

TEST_CASE("device logprobs are the reference's: the listed tokens exactly, values within the sum's rounding",
          "[cuda][logprobs]") {
  ASTRAI_REQUIRE_GPU();
  std::mt19937 rng(20261203);
  cuda::DeviceSampler sampler;
  for (const int vocab : {1, 5, 65, 2049, 40000}) {
    Batch b{vocab};
    for (int i = 0; i < 16; ++i) add_row(b, rng, i % 2 == 0, std::vector<int>{0, 1, 5, 20}[size_t(i % 4)]);
    bind_views(b);
    int host_rows = -1;
    const auto got = on_device(sampler, b, host_rows);
    const auto want = sample_rows(b.host(), b.rules);
    for (size_t r = 0; r < got.size(); ++r) {
      INFO("vocabulary " << vocab << ", row " << r << ", top " << b.rules[r].logprobs);
      REQUIRE(got[r].token == want[r].token);
      if (!want[r].error.empty()) continue;
      REQUIRE(got[r].logprobs.has_value());
      REQUIRE(want[r].logprobs.has_value());
      const TokenLogprobs& g = *got[r].logprobs;
      const TokenLogprobs& w = *want[r].logprobs;
      // Two float64 sums of the same n terms in different orders differ by at
      // most 2n 2^-53 of the total (Higham 4.2), which is the error of
      // log(total); each value also rounds once at its own size.
      float row_max = -std::numeric_limits<float>::infinity();
      for (int j = 0; j < vocab; ++j) row_max = std::max(row_max, b.logits[r * size_t(vocab) + size_t(j)]);
      const auto tolerance = [&](double value) {
        return 2.0 * vocab * 0x1p-53 + 4.0 * 0x1p-53 * (std::abs(value) + std::abs(double(row_max)));
      };
      CHECK(std::abs(g.logprob - w.logprob) <= tolerance(w.logprob));
      REQUIRE(g.top.size() == w.top.size());
      for (size_t k = 0; k < g.top.size(); ++k) {
        CHECK(g.top[k].token == w.top[k].token);
        CHECK(std::abs(g.top[k].logprob - w.top[k].logprob) <= tolerance(w.top[k].logprob));
      }
    }
  }
}
