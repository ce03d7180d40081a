// DeviceSampler: the sampling kernel's parameters up, its tokens down, and
// the reference sampler for the rows it leaves to the host.
#include "cuda/device_sampler.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <xtensor/xtensor.hpp>

#include "cuda/cuda_check.h"

namespace astrai::cuda {

DeviceSamplingRow device_sampling_row(const RowSampling& row) {
  DeviceSamplingRow d;
  d.temperature = row.params.temperature;
  d.top_k = row.params.top_k;
  d.top_p = row.params.top_p;
  d.uniform = row.uniform;
  bool valid = row.uniform >= 0.0 && row.uniform < 1.0;
  try {
    row.params.validate();
  } catch (const std::invalid_argument&) {
    valid = false;
  }
  if (!valid) d.top_k = -1;  // the reference sampler decides what happens
  // Penalties, bias, min_p and logprobs are not done on the device yet: the host's rule.
  if (!row.adjustments.empty() || row.params.min_p > 0.0f || row.logprobs >= 0) d.top_k = -1;
  return d;
}

std::vector<SampledToken> DeviceSampler::sample(const float* logits, int vocab, std::span<const RowSampling> rows,
                                                cudaStream_t stream) {
  const int n = int(rows.size());
  host_rows_ = 0;
  results_host_.assign(size_t(n), DeviceSampledToken{});
  if (n == 0) return {};
  if (n > capacity_) {
    ASTRAI_CUDA_CHECK(cudaStreamSynchronize(stream));  // the old buffers may still be in use
    capacity_ = std::max({n, 2 * capacity_, 16});
    params_ = DeviceBuffer(size_t(capacity_) * sizeof(DeviceSamplingRow),
                           "sampling parameters for " + std::to_string(capacity_) + " rows");
    results_ = DeviceBuffer(size_t(capacity_) * sizeof(DeviceSampledToken),
                            "sampled tokens for " + std::to_string(capacity_) + " rows");
  }
  params_host_.resize(size_t(n));
  for (int r = 0; r < n; ++r) params_host_[size_t(r)] = device_sampling_row(rows[size_t(r)]);
  ASTRAI_CUDA_CHECK(cudaMemcpyAsync(params_.get(), params_host_.data(), size_t(n) * sizeof(DeviceSamplingRow),
                                    cudaMemcpyHostToDevice, stream));
  launch_sample_rows(logits, n, vocab, params_.as<DeviceSamplingRow>(), results_.as<DeviceSampledToken>(), stream);
  ASTRAI_CUDA_CHECK(cudaMemcpyAsync(results_host_.data(), results_.get(), size_t(n) * sizeof(DeviceSampledToken),
                                    cudaMemcpyDeviceToHost, stream));
  ASTRAI_CUDA_CHECK(cudaStreamSynchronize(stream));

  std::vector<SampledToken> tokens(rows.size());
  xt::xtensor<float, 2> row_logits({size_t(1), size_t(vocab)});
  for (int r = 0; r < n; ++r) {
    const DeviceSampledToken& d = results_host_[size_t(r)];
    if (d.status == kSampleOk && d.token >= 0 && d.token < vocab) {
      tokens[size_t(r)].token = d.token;
      continue;
    }
    // Bad logits or a rule kept on the host: the reference sampler on this
    // row gives the error text (or the token) exactly as on the host.
    ++host_rows_;
    ASTRAI_CUDA_CHECK(cudaMemcpy(row_logits.data(), logits + size_t(r) * size_t(vocab), size_t(vocab) * 4,
                                 cudaMemcpyDeviceToHost));
    tokens[size_t(r)] = sample_rows(row_logits, rows.subspan(size_t(r), 1)).front();
  }
  return tokens;
}

}  // namespace astrai::cuda
