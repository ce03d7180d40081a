// The simplest KV cache: one dense block per sequence slot,
// [n_layers, n_slots, max_seq_len, kv_dim]. The reference generation loop and
// the tests use it; `seq` is the slot index.
#pragma once

#include <stdexcept>
#include <string>

#include <xtensor/xtensor.hpp>

#include "reference/kv_cache_view.h"
#include "reference/model_config.h"

namespace astrai {

class DenseKVCache final : public KVCacheView {
 public:
  DenseKVCache(const ModelConfig& config, int n_slots)
      : keys_({size_t(config.n_layers), size_t(n_slots), size_t(config.max_seq_len), size_t(config.kv_dim())}),
        values_(keys_.shape()) {}

  void write(int layer, int seq, int pos, const float* key, const float* value) override {
    float* k = slot(keys_, layer, seq, pos);
    float* v = slot(values_, layer, seq, pos);
    for (size_t i = 0; i < keys_.shape(3); ++i) {
      k[i] = key[i];
      v[i] = value[i];
    }
  }
  const float* key(int layer, int seq, int pos) const override {
    return const_cast<DenseKVCache*>(this)->slot(const_cast<xt::xtensor<float, 4>&>(keys_), layer, seq, pos);
  }
  const float* value(int layer, int seq, int pos) const override {
    return const_cast<DenseKVCache*>(this)->slot(const_cast<xt::xtensor<float, 4>&>(values_), layer, seq, pos);
  }

  int n_slots() const { return int(keys_.shape(1)); }
  int max_seq_len() const { return int(keys_.shape(2)); }

 private:
  float* slot(xt::xtensor<float, 4>& t, int layer, int seq, int pos) {
    if (layer < 0 || size_t(layer) >= t.shape(0) || seq < 0 || size_t(seq) >= t.shape(1) || pos < 0 ||
        size_t(pos) >= t.shape(2))
      throw std::out_of_range("DenseKVCache: layer " + std::to_string(layer) + ", slot " + std::to_string(seq) +
                              ", position " + std::to_string(pos) + " is outside the cache");
    return &t(size_t(layer), size_t(seq), size_t(pos), 0);
  }
  xt::xtensor<float, 4> keys_;
  xt::xtensor<float, 4> values_;
};

}  // namespace astrai
