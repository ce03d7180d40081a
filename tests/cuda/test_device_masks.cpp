// Token masks on the device (issue 27): DeviceSampler uploads every row's
// mask once per step and sample.cu reads a masked token's logit as -inf.
//
// Exactness: the kernel takes the reference's steps on the same operands
// (test_device_sampling.cpp says why the tokens are EQUAL in the emulated
// build); a mask only turns some logits into -inf before those steps, which
// apply_token_mask does to the host's copy of the row, so masked tokens must
// be equal too, bit for bit. Rows of vocabularies around 32-token word
// boundaries, masks dense and sparse and single-token, batches mixing masked
// and free rows. Through the engine, graphs on and off: test_cuda_constraints.cpp.
#include <algorithm>
#include <limits>
#include <random>
#include <vector>

#include <catch2/catch.hpp>
#include <xtensor/xtensor.hpp>

#include "cuda/device_sampler.h"
#include "cuda/kernel_cases/sampling_rows.h"
#include "reference/sampling/sampler.h"
#include "reference/sampling/token_mask.h"
#include "tests/cuda/gpu_test_support.h"
#include "tests/support/test_only_constraints.h"

using namespace astrai;

namespace {

struct MaskedBatch {
  int vocab = 0;
  std::vector<float> logits = {};
  std::vector<std::vector<std::uint32_t>> masks = {};  // empty: a free row
  std::vector<RowSampling> rules = {};
  xt::xtensor<float, 2> host() const {
    xt::xtensor<float, 2> m({rules.size(), size_t(vocab)});
    std::copy(logits.begin(), logits.end(), m.begin());
    return m;
  }
};

// A mask of one of five kinds: dense (3 in 4), sparse (1 in 40), the tokens
// at 32-token word edges (31, 32, 63, 64, ...), one random token, or the
// last token alone. Always at least one token allowed.
std::vector<std::uint32_t> random_mask(int vocab, std::mt19937& rng) {
  std::vector<std::uint32_t> mask(token_mask_words(size_t(vocab)), 0u);
  std::uniform_int_distribution<int> id(0, vocab - 1);
  const int kind = std::uniform_int_distribution<int>(0, 4)(rng);
  for (int t = 0; t < vocab; ++t) {
    bool allowed = false;
    if (kind == 0) allowed = rng() % 4 != 0;
    if (kind == 1) allowed = rng() % 40 == 0;
    if (kind == 2) allowed = t % 32 == 31 || t % 32 == 0;
    if (allowed) test::set_bit(mask, t);
  }
  if (kind == 3) test::set_bit(mask, id(rng));
  if (kind == 4 || allowed_tokens(mask, size_t(vocab)) == 0) test::set_bit(mask, vocab - 1);
  return mask;
}

// Row r has an allowed token with a finite logit (random_logit_row masks
// some tokens with -inf itself): the last allowed token's logit becomes 0 if not.
void ensure_finite_allowed(MaskedBatch& b, size_t r) {
  float* row = b.logits.data() + r * size_t(b.vocab);
  int last = -1;
  for (int t = 0; t < b.vocab; ++t) {
    const bool allowed = b.masks[r].empty() || token_allowed(b.masks[r], size_t(t));
    if (allowed && row[t] > -std::numeric_limits<float>::infinity()) return;
    if (allowed) last = t;
  }
  row[last] = 0.0f;
}

void add_row(MaskedBatch& b, std::mt19937& rng, bool masked) {
  auto pick = [&](auto first, auto... rest) {
    const std::vector<decltype(first)> v = {first, rest...};
    return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
  };
  const std::vector<float> row = cuda::cases::random_logit_row(b.vocab, rng, false);
  b.logits.insert(b.logits.end(), row.begin(), row.end());
  RowSampling r;
  r.params.temperature = pick(0.0f, 0.7f, 1.3f);
  // top_k 0 on a masked row keeps only the allowed tokens: the device takes it
  // when they are few (a free row with top_k 0 over a large vocabulary goes to the host).
  r.params.top_k = pick(0, 1, 2, 50, cuda::kSampleMaxKept);
  r.params.top_p = pick(1.0f, 0.9f, 0.5f);
  r.params.min_p = pick(0.0f, 0.05f);
  r.uniform = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  b.masks.push_back(masked ? random_mask(b.vocab, rng) : std::vector<std::uint32_t>{});
  b.rules.push_back(r);
  ensure_finite_allowed(b, b.rules.size() - 1);
}

void bind_masks(MaskedBatch& b) {
  for (size_t i = 0; i < b.rules.size(); ++i) b.rules[i].mask = b.masks[i];
}

}  // namespace

TEST_CASE("masked device sampling equals the masked reference sampler, bit for bit, beside free rows",
          "[cuda][mask]") {
  ASTRAI_REQUIRE_GPU();
  std::mt19937 rng(20261227);
  cuda::DeviceSampler sampler;
  int masked_on_device = 0, masked_rows = 0;
  for (const int vocab : {1, 31, 32, 33, 63, 64, 65, 97, 1000, 2049, 40000}) {
    MaskedBatch b{vocab};
    for (int i = 0; i < 20; ++i) add_row(b, rng, i % 3 != 2);  // two in three masked
    bind_masks(b);
    const cuda::DeviceBuffer d = test::upload(b.logits, cuda::DType::Float32);
    const auto got = sampler.sample(d.as<float>(), b.vocab, b.rules, nullptr);
    const auto results = sampler.last_device_results();
    const auto want = sample_rows(b.host(), b.rules);
    for (size_t r = 0; r < got.size(); ++r) {
      INFO("vocabulary " << vocab << ", row " << r << (b.masks[r].empty() ? " (free)" : " (masked)") << ": "
                         << describe_sampling(b.rules[r].params));
      REQUIRE(want[r].error.empty());
      CHECK(got[r].token == want[r].token);
      if (!b.masks[r].empty()) {
        CHECK(token_allowed(b.masks[r], size_t(got[r].token)));
        ++masked_rows;
        masked_on_device += results[r].status == cuda::kSampleOk ? 1 : 0;
      }
    }
  }
  // The premise that makes this a device test: most masked rows were sampled
  // by the kernel, not sent back to the host's reference.
  INFO(masked_on_device << " of " << masked_rows << " masked rows sampled on the device");
  CHECK(masked_on_device * 10 >= masked_rows * 7);
}

TEST_CASE("a device mask allowing one token gives that token, at every position of a 32-token word",
          "[cuda][mask]") {
  ASTRAI_REQUIRE_GPU();
  std::mt19937 rng(7);
  cuda::DeviceSampler sampler;
  const int vocab = 97;  // three whole words and one of one token
  MaskedBatch b{vocab};
  for (int t = 0; t < vocab; ++t) {
    add_row(b, rng, false);
    b.masks.back().assign(token_mask_words(size_t(vocab)), 0u);
    test::set_bit(b.masks.back(), t);
    ensure_finite_allowed(b, size_t(t));
  }
  bind_masks(b);
  const cuda::DeviceBuffer d = test::upload(b.logits, cuda::DType::Float32);
  const auto got = sampler.sample(d.as<float>(), b.vocab, b.rules, nullptr);
  for (int t = 0; t < vocab; ++t) CHECK(got[size_t(t)].token == t);
  CHECK(sampler.last_host_rows() == 0);
}

