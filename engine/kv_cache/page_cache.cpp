// PageCache: host storage of the pages and the view's address translation.
#include "engine/kv_cache/page_cache.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace astrai {

namespace {

const ModelConfig& validated(const ModelConfig& config) {
  config.validate();
  return config;
}

}  // namespace

PageCache::PageCache(const ModelConfig& config, int n_pages, int page_size, PrefixHash hash)
    : PagedKVCache(validated(config).max_seq_len, n_pages, page_size, std::move(hash)),
      kv_dim_(config.kv_dim()),
      keys_({size_t(config.n_layers), size_t(n_pages), size_t(page_size), size_t(config.n_kv_heads),
             size_t(config.head_dim())}),
      values_(keys_.shape()),
      view_(*this) {}

void PageCache::copy_page(int from, int to) {
  const size_t page_floats = size_t(page_size()) * size_t(kv_dim_);
  for (int layer = 0; layer < n_layers(); ++layer) {
    const size_t layer_start = size_t(layer) * size_t(n_pages()) * page_floats;
    for (xt::xtensor<float, 5>* rows : {&keys_, &values_}) {
      const float* src = rows->data() + layer_start + size_t(from) * page_floats;
      std::copy(src, src + page_floats, rows->data() + layer_start + size_t(to) * page_floats);
    }
  }
}

size_t PageCacheView::row_offset(int layer, int seq, int pos, bool for_write) const {
  if (layer < 0 || layer >= cache_.n_layers())
    throw std::out_of_range("PageCache: layer " + std::to_string(layer) + " is outside [0, " +
                            std::to_string(cache_.n_layers()) + ")");
  const PageManager::RowAddress at = cache_.pages().locate(seq, pos, for_write);
  return ((size_t(layer) * size_t(cache_.n_pages()) + size_t(at.page)) * size_t(cache_.page_size()) +
          size_t(at.offset)) *
         size_t(cache_.kv_dim());
}

void PageCacheView::write(int layer, int seq, int pos, const float* key, const float* value) {
  const size_t at = row_offset(layer, seq, pos, true);
  std::copy(key, key + cache_.kv_dim(), cache_.keys_.data() + at);
  std::copy(value, value + cache_.kv_dim(), cache_.values_.data() + at);
}

const float* PageCacheView::key(int layer, int seq, int pos) const {
  return cache_.keys_.data() + row_offset(layer, seq, pos, false);
}

const float* PageCacheView::value(int layer, int seq, int pos) const {
  return cache_.values_.data() + row_offset(layer, seq, pos, false);
}

}  // namespace astrai
