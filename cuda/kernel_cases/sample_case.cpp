// The sample case: launch_sample_rows (cuda/kernels/sample.cu) against
// sample_with_uniform() of reference/sampling/sampler.cpp, token for token.
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "cuda/cuda_check.h"
#include "cuda/kernel_cases/device_arrays.h"
#include "cuda/kernel_cases/kernel_case.h"
#include "cuda/kernel_cases/sampling_rows.h"
#include "cuda/kernels/kernels.h"
#include "reference/sampling/sampler.h"

namespace astrai::cuda::cases {

std::vector<float> random_logit_row(int vocab, std::mt19937& rng, bool allow_bad) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  const auto below = [&](int n) { return int(rng() % uint32_t(n)); };
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<float> row(static_cast<size_t>(vocab));
  switch (below(allow_bad ? 7 : 6)) {
    case 0: {  // uniform values at one of many scales
      const float scales[] = {1e-30f, 1e-3f, 1.0f, 10.0f, 1e30f, 3e38f};
      const float scale = scales[below(6)];
      for (float& x : row) x = scale * unit(rng);
      break;
    }
    case 1: {  // a few distinct values: ties everywhere, -0 and +0 among them
      const float values[] = {-2.0f, -1.0f, -0.0f, 0.0f, 1.0f, 3.0f, 3.0f};
      const int distinct = 1 + below(7);
      for (float& x : row) x = values[below(distinct)];
      break;
    }
    case 2: {  // mostly masked: a handful of finite logits, sometimes none
      for (float& x : row) x = -inf;
      const int finite = below(6);
      for (int i = 0; i < finite; ++i) row[size_t(below(vocab))] = 3.0f * unit(rng);
      break;
    }
    case 3: {  // extremes: subnormals, zeros, +-FLT_MAX, huge and tiny
      const float values[] = {1e-45f, -1e-45f, 1e-40f, 0.0f, -0.0f, std::numeric_limits<float>::max(),
                              -std::numeric_limits<float>::max(), 1e38f, -1e-38f, 1.0f};
      for (float& x : row) x = values[below(10)];
      break;
    }
    case 4: {  // one dominant logit over a flat sea
      for (float& x : row) x = 0.01f * unit(rng);
      row[size_t(below(vocab))] = 20.0f;
      break;
    }
    case 5: {  // quantized values with many ties near the k-th
      for (float& x : row) x = float(below(40)) * 0.25f;
      break;
    }
    default: {  // bad logits: NaN and/or +inf among ordinary ones
      for (float& x : row) x = 4.0f * unit(rng);
      const int bad = 1 + below(3);
      for (int i = 0; i < bad; ++i)
        row[size_t(below(vocab))] = below(2) ? std::numeric_limits<float>::quiet_NaN() : inf;
      break;
    }
  }
  // -inf masks over any style.
  if (below(3) == 0) {
    const int masked = below(vocab + 1);
    for (int i = 0; i < masked; ++i) row[size_t(below(vocab))] = -inf;
  }
  return row;
}

RowSampling random_row_sampling(std::mt19937& rng) {
  const auto below = [&](int n) { return int(rng() % uint32_t(n)); };
  const float temperatures[] = {0.0f, 0.3f, 1.0f, 2.0f};
  const int top_ks[] = {0, 1, 2, 50, kSampleMaxKept, kSampleMaxKept + 1, 100000};
  const float top_ps[] = {1.0f, 0.9f, 0.5f, 1e-7f};
  RowSampling r;
  r.params.temperature = temperatures[below(4)];
  r.params.top_k = top_ks[below(7)];
  r.params.top_p = top_ps[below(4)];
  switch (below(8)) {
    case 0: r.uniform = 0.0; break;
    case 1: r.uniform = std::nextafter(1.0, 0.0); break;
    default: r.uniform = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  }
  return r;
}

std::array<float, 3> reference_device_result(std::span<const float> logits, const RowSampling& row) {
  int token = -1;
  try {
    token = sample_with_uniform(logits, row.params, row.uniform);
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    const auto index = [&] {
      const size_t at = m.find("token ");
      if (at == std::string::npos) throw std::logic_error("no index in the reference's error: " + m);
      return float(std::stol(m.substr(at + 6)));
    };
    if (m.find("is NaN") != std::string::npos) return {-1.0f, float(kSampleNaN), index()};
    if (m.find("is +inf") != std::string::npos) return {-1.0f, float(kSamplePosInf), index()};
    if (m.find("every one of the") != std::string::npos) return {-1.0f, float(kSampleAllMasked), -1.0f};
    throw;
  }
  // The device's limit (kernels.h): more than kSampleMaxKept candidates after top-k.
  if (row.params.temperature > 0.0f) {
    int finite = 0;
    for (const float x : logits) finite += x > -std::numeric_limits<float>::infinity() ? 1 : 0;
    const int k = row.params.top_k == 0 || row.params.top_k > finite ? finite : row.params.top_k;
    if (k > kSampleMaxKept) return {-1.0f, float(kSampleOnHost), -1.0f};
  }
  return {float(token), float(kSampleOk), -1.0f};
}

namespace {

// mode 0: every row its own random style and rule (the tests); 1: greedy;
// 2: temperature 0.7, top-k 50, top-p 0.9 (a common chat setting); 3:
// temperature 1, top-k at the cap, top-p 0.95. Modes 1-3 are the benchmark's,
// on uniform logits in [-10, 10].
struct SampleRun final : KernelRun {
  int rows, vocab;
  std::vector<float> logits;
  std::vector<RowSampling> sampling;
  DeviceBuffer d_logits, d_params, d_out;

  explicit SampleRun(const KernelShape& s) : rows(s["rows"]), vocab(s["vocab"]) {
    std::mt19937 rng(s.seed);
    const int mode = s["mode"];
    for (int r = 0; r < rows; ++r) {
      std::vector<float> row;
      RowSampling rule;
      if (mode == 0) {
        row = random_logit_row(vocab, rng);
        rule = random_row_sampling(rng);
      } else {
        std::uniform_real_distribution<float> value(-10.0f, 10.0f);
        row.resize(size_t(vocab));
        for (float& x : row) x = value(rng);
        rule.params = mode == 1   ? SamplingParams{0.0f, 0, 1.0f, {}}
                      : mode == 2 ? SamplingParams{0.7f, 50, 0.9f, {}}
                                  : SamplingParams{1.0f, kSampleMaxKept, 0.95f, {}};
        rule.uniform = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
      }
      logits.insert(logits.end(), row.begin(), row.end());
      sampling.push_back(rule);
    }
    d_logits = test::upload(logits, DType::Float32);
    std::vector<DeviceSamplingRow> params;
    for (const RowSampling& rule : sampling)
      params.push_back({rule.params.temperature, rule.params.top_k, rule.params.top_p, rule.uniform});
    d_params = test::upload_structs(params, "sampling parameters");
    d_out = test::nan_filled(size_t(rows) * sizeof(DeviceSampledToken) / 4, DType::Float32);
    bytes = double(rows) * vocab * 4.0;  // at the least, every logit read once
  }
  void launch(int variant, cudaStream_t stream) override {
    if (variant != 1) throw std::invalid_argument("sample has no kernel variant " + std::to_string(variant));
    launch_sample_rows(d_logits.as<float>(), rows, vocab, d_params.as<DeviceSamplingRow>(),
                       d_out.as<DeviceSampledToken>(), stream);
  }
  std::vector<float> result() override {
    ASTRAI_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<DeviceSampledToken> got(static_cast<size_t>(rows));
    ASTRAI_CUDA_CHECK(cudaMemcpy(got.data(), d_out.get(), got.size() * sizeof(DeviceSampledToken),
                                 cudaMemcpyDeviceToHost));
    std::vector<float> out;
    for (const DeviceSampledToken& g : got) out.insert(out.end(), {float(g.token), float(g.status), float(g.index)});
    return out;
  }
  std::vector<float> expected() override {
    std::vector<float> out;
    for (int r = 0; r < rows; ++r) {
      const std::span<const float> row(logits.data() + size_t(r) * size_t(vocab), size_t(vocab));
      const auto e = reference_device_result(row, sampling[size_t(r)]);
      out.insert(out.end(), e.begin(), e.end());
    }
    return out;
  }
};

}  // namespace

KernelCase sample_case() {
  KernelCase c;
  c.name = "sample";
  c.kernel = "cuda/kernels/sample.cu";
  c.reference = "sample_with_uniform() in reference/sampling/sampler.cpp";
  c.tolerance = {0.0, 0.0,
                 "exact: per row {token, status, first bad index}; the device does the reference's float64 "
                 "operations in its order, and in the emulated build exp() is the host's (on a GPU, exp within "
                 "1 ulp moves a token only for a uniform within ~4n 2^-53 of a CDF boundary: docs/cuda.md)"};
  c.draw = [](const Pick& pick) {
    // Vocabularies around each block size's edges (64 threads up to 2048
    // logits, 128 to 8192, 256 to 32768, 512 beyond) and the cap, and any size.
    const uint32_t seed = pick_seed(pick);
    const int vocab = pick_vocab(pick, {1, 2, 63, 64, 65, 1023, 1024, 1025, 2048, 2049, 8193, 33000});
    return KernelShape{DType::Float32, seed, {{"rows", pick(1, 6)}, {"vocab", vocab}, {"mode", 0}}};
  };
  for (const int mode : {1, 2, 3})
    c.bench_shapes.push_back({DType::Float32, 7, {{"rows", 64}, {"vocab", 128256}, {"mode", mode}}});
  c.prepare = [](const KernelShape& s) { return std::make_unique<SampleRun>(s); };
  return c;
}

}  // namespace astrai::cuda::cases
