// DeviceSampler: the sampling kernel's parameters up, its tokens down, and
// the reference sampler for the rows it leaves to the host.
#include "cuda/device_sampler.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <xtensor/xtensor.hpp>

#include "cuda/cuda_check.h"
#include "reference/sampling/token_mask.h"

namespace astrai::cuda {

DeviceSamplingRow device_sampling_row(const RowSampling& row) {
  DeviceSamplingRow d;
  d.temperature = row.params.temperature;
  d.top_k = row.params.top_k;
  d.top_p = row.params.top_p;
  d.min_p = row.params.min_p;
  d.repetition_penalty = row.params.repetition_penalty;
  d.uniform = row.uniform;
  d.logprobs = row.logprobs < 0 ? -1 : std::min(row.logprobs, kDeviceMaxTopLogprobs);
  bool valid = row.uniform >= 0.0 && row.uniform < 1.0 && row.logprobs <= kDeviceMaxTopLogprobs;
  try {
    row.params.validate();
  } catch (const std::invalid_argument&) {
    valid = false;
  }
  if (!valid) d.top_k = -1;  // the reference sampler decides what happens
  return d;
}

namespace {

// A buffer of at least `bytes`, grown (never shrunk) as needed; `stream` is
// synchronised first, since the old buffer may still be read by queued work.
void ensure(DeviceBuffer& buffer, size_t& capacity, size_t bytes, const char* what, cudaStream_t stream) {
  if (bytes <= capacity) return;
  ASTRAI_CUDA_CHECK(cudaStreamSynchronize(stream));
  capacity = std::max(bytes, 2 * capacity);
  buffer = DeviceBuffer(capacity, what);
}

TokenLogprobs from_device(const DeviceTokenLogprobs& d) {
  TokenLogprobs lp;
  lp.logprob = d.logprob;
  for (int i = 0; i < d.n; ++i) lp.top.push_back({d.top_token[i], d.top_logprob[i]});
  return lp;
}

}  // namespace

// Row r's mask at word r * words of the pinned staging, which goes up whole
// in enqueue(); the buffers grow (never shrink) to padded_rows rows of this
// vocabulary's words, and growing drops the graphs that copy from them.
void DeviceSampler::stage_masks(std::span<const RowSampling> rows, int words, int padded_rows, cudaStream_t stream) {
  const size_t bytes = size_t(padded_rows) * size_t(words) * sizeof(std::uint32_t);
  if (bytes > masks_bytes_) {
    ensure(masks_, masks_bytes_, bytes, "token masks", stream);
    masks_staging_ = PinnedBuffer(masks_bytes_);
    ++generation_;
  }
  mask_words_ = words;
  std::uint32_t* staging = masks_staging_.as<std::uint32_t>();
  const DeviceSamplingRow* params = params_host_.as<DeviceSamplingRow>();
  for (size_t r = 0; r < rows.size(); ++r)
    if (params[r].mask_row >= 0)
      std::copy(rows[r].mask.begin(), rows[r].mask.end(), staging + r * size_t(words));
}

std::vector<SampledToken> DeviceSampler::sample(const float* logits, int vocab, std::span<const RowSampling> rows,
                                                cudaStream_t stream) {
  stage(vocab, rows, int(rows.size()), stream);
  enqueue(logits, vocab, stream);
  ASTRAI_CUDA_CHECK(cudaStreamSynchronize(stream));
  return finish(logits, vocab, rows);
}

bool DeviceSampler::stage(int vocab, std::span<const RowSampling> rows, int padded_rows, cudaStream_t stream) {
  const int n = int(rows.size());
  if (padded_rows < n) throw std::invalid_argument("DeviceSampler::stage: fewer padded rows than rows");
  host_rows_ = 0;
  real_rows_ = n;
  staged_rows_ = padded_rows;
  if (padded_rows > capacity_) {
    ASTRAI_CUDA_CHECK(cudaStreamSynchronize(stream));  // the old buffers may still be in use
    capacity_ = std::max({padded_rows, 2 * capacity_, 16});
    const std::string text = " for " + std::to_string(capacity_) + " rows";
    params_ = DeviceBuffer(size_t(capacity_) * sizeof(DeviceSamplingRow), "sampling parameters" + text);
    results_ = DeviceBuffer(size_t(capacity_) * sizeof(DeviceSampledToken), "sampled tokens" + text);
    logprobs_ = DeviceBuffer(size_t(capacity_) * sizeof(DeviceTokenLogprobs), "token logprobs" + text);
    params_host_ = PinnedBuffer(size_t(capacity_) * sizeof(DeviceSamplingRow));
    ++generation_;
    results_host_ = PinnedBuffer(size_t(capacity_) * sizeof(DeviceSampledToken));
    logprobs_host_ = PinnedBuffer(size_t(capacity_) * sizeof(DeviceTokenLogprobs));
  }
  // Each row's parameters, and the penalties' adjustments of every row, one
  // list (O(tokens seen) per penalised row, no pass over the vocabulary).
  DeviceSamplingRow* params = params_host_.as<DeviceSamplingRow>();
  DeviceSampledToken* results = results_host_.as<DeviceSampledToken>();
  adjustments_host_.clear();
  any_logprobs_ = false;
  any_masks_ = false;
  const int words = int(token_mask_words(size_t(vocab)));
  for (int r = 0; r < n; ++r) {
    const RowSampling& row = rows[size_t(r)];
    results[r] = DeviceSampledToken{};
    DeviceSamplingRow& d = params[r] = device_sampling_row(row);
    if (d.top_k < 0) continue;
    const bool inside = std::all_of(row.adjustments.begin(), row.adjustments.end(),
                                    [vocab](const LogitAdjustment& a) { return a.token >= 0 && a.token < vocab; });
    if (!inside) {  // the reference's error text, from the host
      d.top_k = -1;
      continue;
    }
    d.adjust_begin = int(adjustments_host_.size());
    d.adjust_count = int(row.adjustments.size());
    for (const LogitAdjustment& a : row.adjustments)
      adjustments_host_.push_back({a.token, (a.banned ? kAdjustBanned : 0) | (a.repetition ? kAdjustRepetition : 0),
                                   a.offset});
    any_logprobs_ = any_logprobs_ || d.logprobs >= 0;
    if (!row.mask.empty()) {
      if (row.mask.size() != size_t(words)) {  // the reference's error text, from the host
        d.top_k = -1;
        continue;
      }
      d.mask_row = r;
      any_masks_ = true;
    }
  }
  DeviceSamplingRow greedy;
  greedy.temperature = 0.0f;  // the cheapest rule: padded rows' tokens are discarded
  for (int r = n; r < padded_rows; ++r) params[r] = greedy;
  if (any_masks_) stage_masks(rows, words, padded_rows, stream);
  any_adjustments_ = !adjustments_host_.empty();
  if (any_adjustments_) {
    // The list goes up from pinned staging whole (adjustments_bytes_, a size
    // that changes only when it grows), so a graph's captured copy carries
    // whatever list a later step staged; rows read only their own part.
    const size_t list_bytes = adjustments_host_.size() * sizeof(DeviceLogitAdjustment);
    if (list_bytes > adjustments_bytes_) {
      ensure(adjustments_, adjustments_bytes_, std::max(list_bytes, size_t(4096)), "logit adjustments", stream);
      adjustments_staging_ = PinnedBuffer(adjustments_bytes_);
      ++generation_;
    }
    std::copy(adjustments_host_.begin(), adjustments_host_.end(), adjustments_staging_.as<DeviceLogitAdjustment>());
    const size_t adjusted_before = adjusted_bytes_;
    ensure(adjusted_, adjusted_bytes_, size_t(padded_rows) * size_t(vocab) * sizeof(float), "adjusted logits", stream);
    if (adjusted_bytes_ != adjusted_before) ++generation_;
  }
  return true;
}

void DeviceSampler::enqueue(const float* logits, int vocab, cudaStream_t stream) const {
  const int n = staged_rows_;
  if (n == 0) return;
  ASTRAI_CUDA_CHECK(cudaMemcpyAsync(params_.get(), params_host_.get(), size_t(n) * sizeof(DeviceSamplingRow),
                                    cudaMemcpyHostToDevice, stream));
  // Rows with penalties or bias are sampled from an adjusted copy of the
  // logits; the raw logits stay for the logprobs and for the host fallback.
  const float* sampled_logits = logits;
  if (any_adjustments_) {
    ASTRAI_CUDA_CHECK(cudaMemcpyAsync(adjustments_.get(), adjustments_staging_.get(), adjustments_bytes_,
                                      cudaMemcpyHostToDevice, stream));
    launch_adjust_rows(logits, adjusted_.as<float>(), n, vocab, params_.as<DeviceSamplingRow>(),
                       adjustments_.as<DeviceLogitAdjustment>(), stream);
    sampled_logits = adjusted_.as<float>();
  }
  // Token masks: every staged row's words in one copy (a row without a mask
  // has mask_row -1 and its words are not read).
  const unsigned* masks = nullptr;
  if (any_masks_) {
    const size_t bytes = size_t(n) * size_t(mask_words_) * sizeof(std::uint32_t);
    ASTRAI_CUDA_CHECK(cudaMemcpyAsync(masks_.get(), masks_staging_.get(), bytes, cudaMemcpyHostToDevice, stream));
    masks = masks_.as<unsigned>();
  }
  launch_sample_rows(sampled_logits, n, vocab, params_.as<DeviceSamplingRow>(), results_.as<DeviceSampledToken>(),
                     stream, masks, mask_words_);
  if (any_logprobs_) {
    launch_row_logprobs(logits, n, vocab, params_.as<DeviceSamplingRow>(), results_.as<DeviceSampledToken>(),
                        logprobs_.as<DeviceTokenLogprobs>(), stream);
    ASTRAI_CUDA_CHECK(cudaMemcpyAsync(logprobs_host_.get(), logprobs_.get(), size_t(n) * sizeof(DeviceTokenLogprobs),
                                      cudaMemcpyDeviceToHost, stream));
  }
  ASTRAI_CUDA_CHECK(cudaMemcpyAsync(results_host_.get(), results_.get(), size_t(n) * sizeof(DeviceSampledToken),
                                    cudaMemcpyDeviceToHost, stream));
}

std::vector<SampledToken> DeviceSampler::finish(const float* logits, int vocab, std::span<const RowSampling> rows) {
  const int n = int(rows.size());
  if (n != real_rows_) throw std::logic_error("DeviceSampler::finish: not the rows stage() was given");
  std::vector<SampledToken> tokens(rows.size());
  xt::xtensor<float, 2> row_logits({size_t(1), size_t(vocab)});
  const DeviceSamplingRow* params = params_host_.as<DeviceSamplingRow>();
  const DeviceSampledToken* results = results_host_.as<DeviceSampledToken>();
  const DeviceTokenLogprobs* logprobs = logprobs_host_.as<DeviceTokenLogprobs>();
  host_rows_ = 0;
  for (int r = 0; r < n; ++r) {
    const DeviceSampledToken& d = results[r];
    if (d.status == kSampleOk && d.token >= 0 && d.token < vocab) {
      tokens[size_t(r)].token = d.token;
      if (params[r].logprobs >= 0) tokens[size_t(r)].logprobs = from_device(logprobs[r]);
      continue;
    }
    // Bad logits or a rule kept on the host: the reference sampler on this
    // row (the raw logits: sample_rows applies the adjustments itself) gives
    // the error text, or the token and its logprobs, exactly as on the host.
    ++host_rows_;
    ASTRAI_CUDA_CHECK(cudaMemcpy(row_logits.data(), logits + size_t(r) * size_t(vocab), size_t(vocab) * 4,
                                 cudaMemcpyDeviceToHost));
    tokens[size_t(r)] = sample_rows(row_logits, rows.subspan(size_t(r), 1)).front();
  }
  return tokens;
}

}  // namespace astrai::cuda
