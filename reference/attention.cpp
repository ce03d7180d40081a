#include "reference/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace astrai {
namespace {

// Softmax in place: p_j = exp(s_j - max s) / sum_k exp(s_k - max s).
// Subtracting the max keeps exp from overflowing and does not change p.
void softmax(std::vector<float>& s) {
  const float max = *std::max_element(s.begin(), s.end());
  float sum = 0.0f;
  for (float& x : s) {
    x = std::exp(x - max);
    sum += x;
  }
  for (float& x : s) x /= sum;
}

// One query head of one token against positions 0..pos of its sequence.
void attend_head(const float* q, int seq, int pos, int layer, int kv_head, const KVCacheView& cache,
                 int head_dim, float* out) {
  const float scale = 1.0f / std::sqrt(float(head_dim));
  std::vector<float> scores(size_t(pos) + 1);
  for (int j = 0; j <= pos; ++j) {
    const float* k = cache.key(layer, seq, j) + kv_head * head_dim;
    float dot = 0.0f;
    for (int i = 0; i < head_dim; ++i) dot += q[i] * k[i];
    scores[size_t(j)] = dot * scale;
  }
  softmax(scores);
  std::fill(out, out + head_dim, 0.0f);
  for (int j = 0; j <= pos; ++j) {
    const float* v = cache.value(layer, seq, j) + kv_head * head_dim;
    for (int i = 0; i < head_dim; ++i) out[i] += scores[size_t(j)] * v[i];
  }
}

}  // namespace

xt::xtensor<float, 2> causal_attention(const xt::xtensor<float, 2>& q, std::span<const BatchToken> batch,
                                       const KVCacheView& cache, int layer, const ModelConfig& config) {
  const int head_dim = config.head_dim();
  const int group = config.n_heads / config.n_kv_heads;  // query heads sharing one K/V head
  xt::xtensor<float, 2> out(q.shape());
  for (size_t r = 0; r < batch.size(); ++r) {
    for (int h = 0; h < config.n_heads; ++h) {
      attend_head(&q(r, size_t(h * head_dim)), batch[r].seq, batch[r].pos, layer, h / group, cache, head_dim,
                  &out(r, size_t(h * head_dim)));
    }
  }
  return out;
}

}  // namespace astrai
