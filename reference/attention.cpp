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

// The cached K and V rows (all heads) of positions 0..pos of one sequence,
// looked up once per token and layer rather than once per head.
struct CachedRows {
  std::vector<const float*> keys, values;
};

CachedRows cached_rows(const KVCacheView& cache, int layer, int seq, int pos) {
  CachedRows rows;
  for (int j = 0; j <= pos; ++j) {
    rows.keys.push_back(cache.key(layer, seq, j));
    rows.values.push_back(cache.value(layer, seq, j));
  }
  return rows;
}

// score_j = (q . k_j) / sqrt(head_dim) for every cached position j, where k_j
// is the head's slice [offset, offset + head_dim) of key row j.
//
// Each dot product sums q[i] k_j[i] over i = 0, 1, ... in order, in float, so
// the scores are bit for bit those of a plain loop. They are taken kBlock
// positions at a time only for speed: one dot product alone waits on each of
// its additions, while kBlock independent sums keep the CPU busy.
std::vector<float> scaled_scores(const float* q, const std::vector<const float*>& keys, size_t offset,
                                 int head_dim) {
  constexpr size_t kBlock = 8;
  const float scale = 1.0f / std::sqrt(float(head_dim));
  const size_t n = keys.size();
  std::vector<float> scores(n);
  size_t j = 0;
  for (; j + kBlock <= n; j += kBlock) {
    float dot[kBlock] = {};
    for (int i = 0; i < head_dim; ++i)
      for (size_t b = 0; b < kBlock; ++b) dot[b] += q[i] * keys[j + b][offset + size_t(i)];
    for (size_t b = 0; b < kBlock; ++b) scores[j + b] = dot[b] * scale;
  }
  for (; j < n; ++j) {  // the last n % kBlock positions
    float dot = 0.0f;
    for (int i = 0; i < head_dim; ++i) dot += q[i] * keys[j][offset + size_t(i)];
    scores[j] = dot * scale;
  }
  return scores;
}

// One query head against positions 0..pos; `offset` = kv_head * head_dim
// picks its K/V head within each cached row.
void attend_head(const float* q, const CachedRows& rows, size_t offset, int head_dim, float* out) {
  std::vector<float> p = scaled_scores(q, rows.keys, offset, head_dim);
  softmax(p);
  std::fill(out, out + head_dim, 0.0f);
  for (size_t j = 0; j < p.size(); ++j) {
    const float* v = rows.values[j] + offset;
    for (int i = 0; i < head_dim; ++i) out[i] += p[j] * v[i];
  }
}

}  // namespace

xt::xtensor<float, 2> causal_attention(const xt::xtensor<float, 2>& q, std::span<const BatchToken> batch,
                                       const KVCacheView& cache, int layer, const ModelConfig& config) {
  const int head_dim = config.head_dim();
  const int group = config.n_heads / config.n_kv_heads;  // query heads sharing one K/V head
  xt::xtensor<float, 2> out(q.shape());
  for (size_t r = 0; r < batch.size(); ++r) {
    const CachedRows rows = cached_rows(cache, layer, batch[r].seq, batch[r].pos);
    for (int h = 0; h < config.n_heads; ++h) {
      attend_head(&q(r, size_t(h * head_dim)), rows, size_t((h / group) * head_dim), head_dim,
                  &out(r, size_t(h * head_dim)));
    }
  }
  return out;
}

}  // namespace astrai
