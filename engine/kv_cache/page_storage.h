// The K/V storage of the paged KV cache: keys and values as
// [n_layers, n_pages, page_size, n_kv_heads, head_dim] float tensors, so the
// row of (layer, page, offset) is kv_dim contiguous floats.
#pragma once

#include <cstddef>

#include <xtensor/xtensor.hpp>

#include "reference/model_config.h"

namespace astrai {

class PageStorage {
 public:
  // Throws std::invalid_argument for an invalid config, n_pages < 1 or page_size < 1.
  PageStorage(const ModelConfig& config, int n_pages, int page_size);

  int n_layers() const { return int(keys_.shape(0)); }
  int n_pages() const { return int(keys_.shape(1)); }
  int page_size() const { return int(keys_.shape(2)); }
  int kv_dim() const { return kv_dim_; }

  // Row [layer, page, offset, :, :]; the caller has checked the indices.
  float* key_row(int layer, int page, int offset) { return keys_.data() + row_offset(layer, page, offset); }
  float* value_row(int layer, int page, int offset) { return values_.data() + row_offset(layer, page, offset); }
  const float* key_row(int layer, int page, int offset) const { return keys_.data() + row_offset(layer, page, offset); }
  const float* value_row(int layer, int page, int offset) const {
    return values_.data() + row_offset(layer, page, offset);
  }

  const xt::xtensor<float, 5>& keys() const { return keys_; }
  const xt::xtensor<float, 5>& values() const { return values_; }

 private:
  size_t row_offset(int layer, int page, int offset) const {
    return ((size_t(layer) * keys_.shape(1) + size_t(page)) * keys_.shape(2) + size_t(offset)) * size_t(kv_dim_);
  }
  int kv_dim_;
  xt::xtensor<float, 5> keys_;
  xt::xtensor<float, 5> values_;
};

}  // namespace astrai
