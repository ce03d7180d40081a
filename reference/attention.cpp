#include "reference/attention.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace astrai {
namespace {

// Softmax in place: p_j = exp(s_j - max s) / sum_k exp(s_k - max s).
// Subtracting the max keeps exp from overflowing and does not change p.
// With a sink logit (`sink` non-null) the max and the sum include it:
// p_j = exp(s_j - m) / (sum_k exp(s_k - m) + exp(sink - m)), m = max(max s, sink).
void softmax(std::vector<float>& s, const float* sink) {
  float max = *std::max_element(s.begin(), s.end());
  if (sink) max = std::max(max, *sink);
  float sum = 0.0f;
  for (float& x : s) {
    x = std::exp(x - max);
    sum += x;
  }
  if (sink) sum += std::exp(*sink - max);
  for (float& x : s) x /= sum;
}

// The cached K and V rows (all heads) of positions first..pos of one
// sequence, looked up once per row and layer rather than once per head.
struct CachedRows {
  std::vector<const float*> keys, values;
};

CachedRows cached_rows(const KVCacheView& cache, int layer, int seq, int first, int pos) {
  CachedRows rows;
  for (int j = first; j <= pos; ++j) {
    rows.keys.push_back(cache.key(layer, seq, j));
    rows.values.push_back(cache.value(layer, seq, j));
  }
  return rows;
}

// One query head, the textbook way: score_j = (q . k_j) * scale for
// every position j of `rows`, softmax (with the head's sink logit, if any),
// then out = sum_j p_j v_j. `offset` = kv_head * head_dim picks the head's
// slice of each cached row. Each dot product sums q[i] k_j[i] over
// i = 0, 1, ... in order, in float, as llama2.c's run.c does.
void attend_head(const float* q, const CachedRows& rows, size_t offset, int head_dim, float scale, const float* sink,
                 float* out) {
  std::vector<float> p(rows.keys.size());
  for (size_t j = 0; j < p.size(); ++j) {
    const float* k = rows.keys[j] + offset;
    float dot = 0.0f;
    for (int i = 0; i < head_dim; ++i) dot += q[i] * k[i];
    p[j] = dot * scale;
  }
  softmax(p, sink);
  std::fill(out, out + head_dim, 0.0f);
  for (size_t j = 0; j < p.size(); ++j) {
    const float* v = rows.values[j] + offset;
    for (int i = 0; i < head_dim; ++i) out[i] += p[j] * v[i];
  }
}

}  // namespace

xt::xtensor<float, 2> causal_attention(const xt::xtensor<float, 2>& q, std::span<const BatchToken> batch,
                                       const KVCacheView& cache, int layer, const ModelConfig& config,
                                       const xt::xtensor<float, 1>& sinks) {
  const int head_dim = config.head_dim();
  const int group = config.n_heads / config.n_kv_heads;  // query heads sharing one K/V head
  const int window = config.window(layer);
  if (sinks.size() != 0 && sinks.size() != size_t(config.n_heads))
    throw std::invalid_argument("causal_attention: sinks needs one logit per query head");
  xt::xtensor<float, 2> out(q.shape());
  for (size_t r = 0; r < batch.size(); ++r) {
    const int pos = batch[r].pos, first = window > 0 ? std::max(0, pos - window + 1) : 0;
    const CachedRows rows = cached_rows(cache, layer, batch[r].seq, first, pos);
    for (int h = 0; h < config.n_heads; ++h)
      attend_head(&q(r, size_t(h * head_dim)), rows, size_t((h / group) * head_dim), head_dim, config.attention_scale(),
                  sinks.size() ? &sinks(size_t(h)) : nullptr, &out(r, size_t(h * head_dim)));
  }
  return out;
}

}  // namespace astrai
