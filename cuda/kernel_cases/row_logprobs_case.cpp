// The row_logprobs case: launch_row_logprobs (cuda/kernels/row_logprobs.cu)
// against token_logprobs() of reference/sampling/logprobs.cpp. Rows draw their
// logits (random_logit_row: every scale, ties, -inf masks), how many top
// tokens they ask for (none, 0, 1, 5, 20) and whether the sampler took them
// on the device; rows that did not ask, or were not sampled on the device,
// must be left exactly as they were.
//
// The outputs mix exact integers (the count, the listed ids) with float64
// values whose error has a bound of its own per value, so the case states its
// own check() instead of compare()'s one relative tolerance over the array.
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>

#include "cuda/cuda_check.h"
#include "cuda/kernel_cases/device_arrays.h"
#include "cuda/kernel_cases/kernel_case.h"
#include "cuda/kernel_cases/sampling_rows.h"
#include "cuda/kernels/kernels.h"
#include "reference/sampling/logprobs.h"

namespace astrai::cuda::cases {
namespace {

constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

bool untouched(const DeviceTokenLogprobs& o) {  // every byte still the 0xff the buffer was filled with
  const auto* b = reinterpret_cast<const unsigned char*>(&o);
  for (size_t i = 0; i < sizeof o; ++i)
    if (b[i] != 0xff) return false;
  return true;
}

struct LogprobsRun final : KernelRun {
  int rows, vocab;
  std::vector<float> logits;
  std::vector<DeviceSamplingRow> params;
  std::vector<DeviceSampledToken> sampled;
  DeviceBuffer d_logits, d_params, d_sampled, d_out;

  explicit LogprobsRun(const KernelShape& s) : rows(s["rows"]), vocab(s["vocab"]) {
    std::mt19937 rng(s.seed);
    const int top[] = {-1, 0, 1, 5, kDeviceMaxTopLogprobs};
    for (int r = 0; r < rows; ++r) {
      const std::vector<float> row = random_logit_row(vocab, rng, /*allow_bad=*/false);
      logits.insert(logits.end(), row.begin(), row.end());
      DeviceSamplingRow p;
      p.logprobs = s["all_ask"] ? kDeviceMaxTopLogprobs : top[rng() % 5];
      params.push_back(p);
      // The sampler's outcome: a finite token (what sampling can choose), or
      // every logit masked, or the row left to the host one time in six.
      std::vector<int> finite;
      for (int j = 0; j < vocab; ++j)
        if (row[size_t(j)] > kMinusInf) finite.push_back(j);
      DeviceSampledToken t;
      if (finite.empty()) {
        t.status = kSampleAllMasked;
      } else if (!s["all_ask"] && rng() % 6 == 0) {
        t.status = kSampleOnHost;
      } else {
        t.status = kSampleOk;
        t.token = finite[rng() % finite.size()];
      }
      sampled.push_back(t);
    }
    d_logits = test::upload(logits, DType::Float32);
    d_params = test::upload_structs(params, "sampling parameters");
    d_sampled = test::upload_structs(sampled, "sampled tokens");
    static_assert(sizeof(DeviceTokenLogprobs) % 4 == 0);
    d_out = test::nan_filled(size_t(rows) * sizeof(DeviceTokenLogprobs) / 4, DType::Float32);  // all bytes 0xff
    // A row that asks reads its logits twice (maximum, sum) and once per listed token.
    for (const DeviceSamplingRow& p : params)
      bytes += p.logprobs < 0 ? 0.0 : double(vocab) * 4.0 * (2.0 + p.logprobs);
  }
  void launch(int variant, cudaStream_t stream) override {
    if (variant != 1) throw std::invalid_argument("row_logprobs has no kernel variant " + std::to_string(variant));
    launch_row_logprobs(d_logits.as<float>(), rows, vocab, d_params.as<DeviceSamplingRow>(),
                        d_sampled.as<DeviceSampledToken>(), d_out.as<DeviceTokenLogprobs>(), stream);
  }

  std::vector<DeviceTokenLogprobs> downloaded() const {
    ASTRAI_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<DeviceTokenLogprobs> got(static_cast<size_t>(rows));
    ASTRAI_CUDA_CHECK(cudaMemcpy(got.data(), d_out.get(), got.size() * sizeof(DeviceTokenLogprobs),
                                 cudaMemcpyDeviceToHost));
    return got;
  }
  bool asks(int r) const { return params[size_t(r)].logprobs >= 0 && sampled[size_t(r)].status == kSampleOk; }
  std::span<const float> row(int r) const { return {logits.data() + size_t(r) * size_t(vocab), size_t(vocab)}; }
  TokenLogprobs reference(int r) const {
    return token_logprobs(row(r), sampled[size_t(r)].token, params[size_t(r)].logprobs);
  }

  // For display (the check below is on the float64 values): per row, -1 when
  // left alone, else the count, the ids and the values as float.
  std::vector<float> result() override {
    std::vector<float> out;
    const auto got = downloaded();
    for (int r = 0; r < rows; ++r) {
      const DeviceTokenLogprobs& g = got[size_t(r)];
      if (untouched(g)) {
        out.push_back(-1.0f);
        continue;
      }
      out.insert(out.end(), {float(g.n), float(g.logprob)});
      for (int k = 0; k < g.n && k < kDeviceMaxTopLogprobs; ++k)
        out.insert(out.end(), {float(g.top_token[k]), float(g.top_logprob[k])});
    }
    return out;
  }
  std::vector<float> expected() override {
    std::vector<float> out;
    for (int r = 0; r < rows; ++r) {
      if (!asks(r)) {
        out.push_back(-1.0f);
        continue;
      }
      const TokenLogprobs w = reference(r);
      out.insert(out.end(), {float(w.top.size()), float(w.logprob)});
      for (const TopLogprob& t : w.top) out.insert(out.end(), {float(t.token), float(t.logprob)});
    }
    return out;
  }

  // Rows not asked: untouched. Rows asked: the count and the ids equal (the
  // order "larger logit, then lower id" involves no rounding), each value
  // within unit * (4 vocab + 4 (|value| + |row max|)) of the reference's.
  // With unit = 2^-53 that bound is: the two sums of exp(l - max) in
  // different orders (block order vs id order) differ by at most 2(n-1) units
  // of the total (Higham 4.2); exp() within 1 ulp on a GPU adds 2n more (the
  // emulated build runs the host's exp: identical terms); log(total) carries
  // that relative error as an absolute one, and the roundings of max +
  // log(total) and l - that are each a unit of a value below |value| +
  // |max| + log(n).
  std::string check(double unit) override {
    const auto got = downloaded();
    for (int r = 0; r < rows; ++r) {
      std::ostringstream where;
      where << "row " << r << " (top " << params[size_t(r)].logprobs << ", status " << sampled[size_t(r)].status
            << "): ";
      const DeviceTokenLogprobs& g = got[size_t(r)];
      if (!asks(r)) {
        if (!untouched(g)) return where.str() + "written, though it did not ask or was not sampled on the device";
        continue;
      }
      const TokenLogprobs w = reference(r);
      float row_max = kMinusInf;
      for (const float x : row(r)) row_max = std::max(row_max, x);
      const auto close = [&](double actual, double want) {
        const double bound = unit * (4.0 * vocab + 4.0 * (std::abs(want) + std::abs(double(row_max))));
        return std::abs(actual - want) <= bound;  // NaN fails
      };
      if (g.n != int(w.top.size()))
        return where.str() + "lists " + std::to_string(g.n) + " tokens, the reference " + std::to_string(w.top.size());
      if (!close(g.logprob, w.logprob)) {
        where.precision(17);
        where << "the chosen token's logprob is " << g.logprob << ", the reference's " << w.logprob;
        return where.str();
      }
      for (int k = 0; k < g.n; ++k) {
        const TopLogprob& t = w.top[size_t(k)];
        if (g.top_token[k] != t.token || !close(g.top_logprob[k], t.logprob)) {
          where.precision(17);
          where << "rank " << k << " is token " << g.top_token[k] << " at " << g.top_logprob[k]
                << ", the reference's token " << t.token << " at " << t.logprob;
          return where.str();
        }
      }
    }
    return "";
  }
};

}  // namespace

KernelCase row_logprobs_case() {
  // The tolerance is the unit of the per-value bound of LogprobsRun::check(), which derives it.
  return {"row_logprobs", "cuda/kernels/row_logprobs.cu", "token_logprobs() in reference/sampling/logprobs.cpp", 1,
          {0x1p-53, 0x1p-53,
           "counts and ids exact (no rounding decides them); each logprob within 2^-53 (4 vocab + 4 (|value| + |row "
           "max|)): the exp sum in the block's order, not id order (Higham 4.2), exp within 1 ulp on a GPU, and the "
           "roundings of log-sum-exp"},
          [](const Pick& pick) {  // rows around the block's 256 threads and the 20 tokens asked
            return KernelShape{DType::Float32, pick_seed(pick),
                               {{"rows", pick(1, 6)},
                                {"vocab", pick_vocab(pick, {1, 2, 19, 20, 21, 255, 256, 257, 1025, 33000})},
                                {"all_ask", 0}}};
          },
          // Every row of a decode batch asking for the 20 most likely tokens.
          {KernelShape{DType::Float32, 7, {{"rows", 64}, {"vocab", 128256}, {"all_ask", 1}}}},
          [](const KernelShape& s) { return std::make_unique<LogprobsRun>(s); }};
}

}  // namespace astrai::cuda::cases
