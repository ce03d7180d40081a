// The device sampler (cuda/kernels/sample.cu, through cuda/device_sampler.h)
// against the reference sampler (reference/sampling/sampler.h).
//
// Exactness: the kernel does the reference's float64 operations in the
// reference's order, and in the emulated build its exp() is the host's
// (the kernel file is compiled by the host compiler against the same libm),
// so every token must EQUAL sample_with_uniform's, and every bad row's error
// must be the reference's text. On a GPU, CUDA's double exp() is within
// 1 ulp, so a token may differ where a uniform falls within about 4n 2^-53
// of a CDF boundary (docs/cuda.md); with the random uniforms here that has a
// probability near 1e-12 per row, and these tests expect equality there too.
//
// The kernel-case registry's "sample" case (cuda/kernel_cases/sample_case.cpp)
// checks random rows and rules at the kernel's own interface (status and
// first bad index); the cases here go through DeviceSampler, the path
// CudaExecutor::forward_and_sample takes.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>
#include <xtensor/xtensor.hpp>

#include "cuda/device_sampler.h"
#include "cuda/kernel_cases/sampling_rows.h"
#include "reference/sampling/rng.h"
#include "reference/sampling/sampler.h"
#include "tests/cuda/gpu_test_support.h"

using namespace astrai;
using cuda::DeviceSampler;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

struct Rows {
  int vocab = 0;
  std::vector<float> logits;  // [rules.size(), vocab]
  std::vector<RowSampling> rules;
  void add(const std::vector<float>& row, const RowSampling& rule) {
    logits.insert(logits.end(), row.begin(), row.end());
    rules.push_back(rule);
  }
  xt::xtensor<float, 2> host() const {
    xt::xtensor<float, 2> m({rules.size(), size_t(vocab)});
    std::copy(logits.begin(), logits.end(), m.begin());
    return m;
  }
};

RowSampling rule(float temperature, int top_k, float top_p, double uniform) {
  RowSampling r;
  r.params.temperature = temperature;
  r.params.top_k = top_k;
  r.params.top_p = top_p;
  r.uniform = uniform;
  return r;
}

// The device sampler's tokens for `rows`, and how many rows it left to the host.
std::vector<SampledToken> sample_on_device(DeviceSampler& sampler, const Rows& rows, int* host_rows = nullptr) {
  const cuda::DeviceBuffer d = test::upload(rows.logits, cuda::DType::Float32);
  auto tokens = sampler.sample(d.as<float>(), rows.vocab, rows.rules, nullptr);
  if (host_rows) *host_rows = sampler.last_host_rows();
  return tokens;
}

// Same token and same error text, row by row; returns the rows compared.
int check_same(const std::vector<SampledToken>& got, const std::vector<SampledToken>& want, const Rows& rows) {
  REQUIRE(got.size() == want.size());
  for (size_t r = 0; r < got.size(); ++r) {
    INFO("row " << r << " of " << got.size() << ", vocabulary " << rows.vocab << ": temperature "
                << rows.rules[r].params.temperature << " top_k " << rows.rules[r].params.top_k << " top_p "
                << rows.rules[r].params.top_p << " u " << rows.rules[r].uniform);
    CHECK(got[r].token == want[r].token);
    CHECK(got[r].error == want[r].error);
  }
  return int(got.size());
}

// The upper tail of the chi-square distribution, Q(df/2, x/2), from the
// series of the lower regularized gamma function (ample precision for tails
// down to 1e-9: 1 - P keeps about 1e-16 absolute).
double chi_square_tail(double x, int df) {
  const double a = df / 2.0, z = x / 2.0;
  if (z <= 0.0) return 1.0;
  double term = 1.0 / a, sum = term;
  for (int n = 1; n < 10000 && term > sum * 1e-17; ++n) {
    term *= z / (a + n);
    sum += term;
  }
  return 1.0 - sum * std::exp(-z + a * std::log(z) - std::lgamma(a));
}

// The x whose tail is alpha, by bisection.
double chi_square_critical(int df, double alpha) {
  double lo = 0.0, hi = 1000.0;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2.0;
    (chi_square_tail(mid, df) > alpha ? lo : hi) = mid;
  }
  return hi;
}

}  // namespace

TEST_CASE("ordering float logits is ordering them divided by any temperature", "[cuda][plan]") {
  // The kernel selects and sorts on the float logits, the reference on
  // double(logit) / double(T): the same order, ties included, for every
  // finite pair and finite T > 0 (no GPU needed: this is the arithmetic).
  const auto finite_float = [] {
    return rc::gen::suchThat(rc::gen::map(rc::gen::arbitrary<uint32_t>(), [](uint32_t bits) {
                               float f;
                               std::memcpy(&f, &bits, sizeof f);
                               return f;
                             }),
                             [](float f) { return std::isfinite(f); });
  };
  rc::prop("pairs of floats, and neighbours", [&] {
    const float a = *finite_float();
    const float b = *rc::gen::oneOf(finite_float(), rc::gen::just(std::nextafter(a, kInf)),
                                    rc::gen::just(std::nextafter(a, -kInf)), rc::gen::just(-a));
    const float t = std::fabs(*finite_float());
    RC_PRE(t > 0.0f);
    const double qa = double(a) / double(t), qb = double(b) / double(t);
    RC_ASSERT((a < b) == (qa < qb));
    RC_ASSERT((a == b) == (qa == qb));
  });
}

TEST_CASE("device sampling gives the reference's token on a grid of rules and vocabularies", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  std::mt19937 rng(20261202);
  DeviceSampler sampler;
  int compared = 0, errors = 0;
  // Vocabularies around each block size (64 threads to 2048 logits, 128 to
  // 8192, 256 to 32768, 512 above) and around the cap of 1024 kept candidates.
  for (const int vocab : {1, 2, 31, 64, 65, 1000, 1024, 1025, 2048, 2049, 5000, 8193, 40000}) {
    Rows rows{vocab, {}, {}};
    for (const float temperature : {0.0f, 0.3f, 1.0f, 2.0f})
      for (const int top_k : {1, 2, 50, cuda::kSampleMaxKept})
        for (const float top_p : {1.0f, 0.9f, 0.5f, 1e-7f})
          rows.add(cuda::cases::random_logit_row(vocab, rng, false),
                   rule(temperature, top_k, top_p, std::uniform_real_distribution<double>(0.0, 1.0)(rng)));
    int host_rows = -1;
    const auto got = sample_on_device(sampler, rows, &host_rows);
    const auto want = sample_rows(rows.host(), rows.rules);
    compared += check_same(got, want, rows);
    // Only rows with nothing to sample (every logit masked) went to the host.
    int row_errors = 0;
    for (const SampledToken& w : want) row_errors += w.error.empty() ? 0 : 1;
    CHECK(host_rows == row_errors);
    errors += row_errors;
  }
  INFO("rows compared " << compared << ", of which all -inf " << errors);
  CHECK(compared == 13 * 64);
  CHECK(errors < compared / 4);  // the rows are mostly samplable
}

TEST_CASE("a row with bad logits fails alone, with the reference's error", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  DeviceSampler sampler;
  for (const int vocab : {1, 7, 100, 3000, 40000}) {
    for (const float temperature : {0.0f, 1.0f}) {
      Rows rows{vocab, {}, {}};
      std::vector<float> good(static_cast<size_t>(vocab));
      for (int i = 0; i < vocab; ++i) good[size_t(i)] = float((i * 37) % 11) - 5.0f;
      const auto with = [&](std::initializer_list<std::pair<int, float>> changes) {
        std::vector<float> row = good;
        for (const auto& [i, v] : changes) row[size_t(i % vocab)] = v;
        return row;
      };
      const RowSampling r = rule(temperature, 50, 0.9f, 0.5);
      const int last = vocab - 1, mid = vocab / 2;
      rows.add(with({{mid, nan}}), r);
      rows.add(good, r);  // a good row between bad ones
      rows.add(with({{last, kInf}}), r);
      rows.add(with({{mid, kInf}, {last, nan}}), r);  // the first bad one is named
      rows.add(with({{mid, kInf}, {0, nan}}), r);
      rows.add(std::vector<float>(size_t(vocab), -kInf), r);
      const auto got = sample_on_device(sampler, rows);
      const auto want = sample_rows(rows.host(), rows.rules);
      check_same(got, want, rows);
      CHECK(want[1].error.empty());
      // The kernel's own report: the status and the first bad index.
      const auto& device = sampler.last_device_results();
      REQUIRE(device.size() == 6);
      const auto status = [](int s, int index) { return std::pair{s, index}; };
      CHECK(status(device[0].status, device[0].index) == status(cuda::kSampleNaN, mid));
      CHECK(device[1].status == cuda::kSampleOk);
      CHECK(status(device[2].status, device[2].index) == status(cuda::kSamplePosInf, last));
      CHECK(status(device[3].status, device[3].index) ==
            (mid == last ? status(cuda::kSampleNaN, last) : status(cuda::kSamplePosInf, mid)));
      CHECK(status(device[4].status, device[4].index) == status(cuda::kSampleNaN, 0));
      CHECK(device[5].status == cuda::kSampleAllMasked);
      CHECK(sampler.last_host_rows() == 5);
    }
  }
}

TEST_CASE("rows the device leaves to the host still get the reference's answer", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  std::mt19937 rng(7);
  const int vocab = 3000;
  std::vector<float> row(static_cast<size_t>(vocab));
  for (float& x : row) x = std::uniform_real_distribution<float>(-4.0f, 4.0f)(rng);
  std::vector<float> masked = row;  // 900 finite logits: top_k 0 keeps them all, under the cap
  for (int i = 900; i < vocab; ++i) masked[size_t(i)] = -kInf;
  std::shuffle(masked.begin(), masked.end(), rng);
  DeviceSampler sampler;
  const struct {
    std::vector<float> logits;
    RowSampling rule;
    bool on_host;
  } cases[] = {
      {row, rule(1.0f, 0, 0.9f, 0.3), true},                             // top_k 0 over 3000 finite logits
      {row, rule(0.7f, cuda::kSampleMaxKept + 1, 1.0f, 0.6), true},      // above the cap
      {row, rule(0.7f, cuda::kSampleMaxKept, 1.0f, 0.6), false},         // at the cap
      {masked, rule(1.0f, 0, 0.95f, 0.8), false},                        // top_k 0, 900 finite
      {row, rule(0.0f, 0, 1.0f, 0.4), false},                            // greedy ignores top_k
      {row, rule(1.0f, 50, 0.9f, 1.0), true},                            // uniform outside [0, 1)
  };
  for (const auto& c : cases) {
    Rows rows{vocab, {}, {}};
    rows.add(c.logits, c.rule);
    int host_rows = -1;
    const auto got = sample_on_device(sampler, rows, &host_rows);
    check_same(got, sample_rows(rows.host(), rows.rules), rows);
    CHECK(host_rows == (c.on_host ? 1 : 0));
  }
}

TEST_CASE("the chi-square tail and critical values used below", "[cuda][plan]") {
  // Textbook values: the 95% points for 1 and 10 degrees of freedom, and the
  // 1e-6 point for one degree (z = 4.891638, z^2 = 23.9284).
  CHECK(chi_square_tail(3.841459, 1) == Approx(0.05).epsilon(1e-5));
  CHECK(chi_square_tail(18.307038, 10) == Approx(0.05).epsilon(1e-5));
  CHECK(chi_square_critical(1, 1e-6) == Approx(23.9284).epsilon(1e-4));
}

TEST_CASE("seeded device draws follow the reference probabilities (chi-square, false alarm 1e-6)", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  // One fixed row and rule, N draws with uniforms from one seeded request
  // generator (as the scheduler draws them), on the device. The counts are
  // compared with N times the reference's probabilities(): Pearson's
  // chi-square over the tokens with p > 0, against the value a correct
  // sampler exceeds with probability 1e-6. The seed is fixed, so the test is
  // deterministic: it cannot flake, and a sampler off by more than the
  // statistic allows fails it every time.
  const std::vector<float> logits = {2.0f, 1.0f, 1.0f, 0.5f, -kInf, 0.0f, -1.0f, 3.0f,
                                     0.25f, -kInf, 1.5f, 0.7f, -3.0f, 2.2f};
  const int vocab = int(logits.size());
  SamplingParams params;
  params.temperature = 0.8f;
  params.top_k = 10;
  params.top_p = 0.97f;
  const std::vector<double> p = probabilities(logits, params);
  const int n = 2000;
  Rng generator(20261203);
  Rows rows{vocab, {}, {}};
  for (int i = 0; i < n; ++i) rows.add(logits, {params, generator.next_uniform()});
  DeviceSampler sampler;
  const auto got = sample_on_device(sampler, rows);
  CHECK(sampler.last_host_rows() == 0);
  std::vector<int> counts(static_cast<size_t>(vocab), 0);
  for (size_t i = 0; i < got.size(); ++i) {
    REQUIRE(got[i].error.empty());
    // Exact: each draw is the reference's for its uniform.
    REQUIRE(got[i].token == sample_with_uniform(logits, params, rows.rules[i].uniform));
    ++counts[size_t(got[i].token)];
  }
  double chi2 = 0.0;
  int categories = 0;
  for (int t = 0; t < vocab; ++t) {
    INFO("token " << t << ": p " << p[size_t(t)] << ", count " << counts[size_t(t)]);
    if (p[size_t(t)] == 0.0) {
      CHECK(counts[size_t(t)] == 0);  // cut by -inf, top-k or top-p: never drawn
      continue;
    }
    const double expected = n * p[size_t(t)];
    REQUIRE(expected >= 5.0);  // the chi-square approximation's usual condition
    chi2 += (counts[size_t(t)] - expected) * (counts[size_t(t)] - expected) / expected;
    ++categories;
  }
  const double critical = chi_square_critical(categories - 1, 1e-6);
  INFO("chi-square " << chi2 << " over " << categories << " tokens; critical value at 1e-6: " << critical);
  CHECK(categories >= 6);
  CHECK(chi2 < critical);
}
