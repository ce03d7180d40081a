// Stand-in K/V rows for cache tests without a model: the row of position p
// is a fingerprint of every token up to p, as real K/V depend on the whole
// prefix. A task reading back anything but the fingerprints of its own
// tokens (another task's row, a stale or wrongly shared page) shows at once.
#pragma once

#include <cstdint>
#include <vector>

#include "reference/kv_cache_view.h"

namespace astrai::test {

// Row element j of the K (which = 0) or V (which = 1) of the last of the
// first n `tokens` in `layer`: 16-bit pieces of a hash of the whole prefix,
// exact in float.
inline float fingerprint(const std::vector<int>& tokens, size_t n, int layer, int which, int j) {
  uint64_t h = 1469598103934665603ULL + uint64_t(layer * 2 + which);
  for (size_t i = 0; i < n; ++i) h = (h ^ uint64_t(tokens[i] + 1)) * 1099511628211ULL;
  return float((h >> (j * 12 % 48)) & 0xffff);
}

// What the forward pass would write for positions [from, to) of `tokens`.
inline void compute_rows(KVCacheView& view, int n_layers, int kv_dim, int task, const std::vector<int>& tokens,
                         int from, int to) {
  std::vector<float> k(static_cast<size_t>(kv_dim)), v(static_cast<size_t>(kv_dim));
  for (int pos = from; pos < to; ++pos) {
    for (int layer = 0; layer < n_layers; ++layer) {
      for (int j = 0; j < kv_dim; ++j) {
        k[size_t(j)] = fingerprint(tokens, size_t(pos) + 1, layer, 0, j);
        v[size_t(j)] = fingerprint(tokens, size_t(pos) + 1, layer, 1, j);
      }
      view.write(layer, task, pos, k.data(), v.data());
    }
  }
}

// Whether positions [0, n) of the task read back the rows of its own tokens.
inline bool rows_match(KVCacheView& view, int n_layers, int kv_dim, int task, const std::vector<int>& tokens,
                       size_t n) {
  for (size_t pos = 0; pos < n; ++pos)
    for (int layer = 0; layer < n_layers; ++layer)
      for (int j = 0; j < kv_dim; ++j)
        if (view.key(layer, task, int(pos))[j] != fingerprint(tokens, pos + 1, layer, 0, j) ||
            view.value(layer, task, int(pos))[j] != fingerprint(tokens, pos + 1, layer, 1, j))
          return false;
  return true;
}

}  // namespace astrai::test
