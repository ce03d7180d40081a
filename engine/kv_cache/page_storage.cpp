// PageStorage: shape checks and allocation of the page tensors.
#include "engine/kv_cache/page_storage.h"

#include <stdexcept>
#include <string>

namespace astrai {

namespace {

const ModelConfig& validated(const ModelConfig& config, int n_pages, int page_size) {
  config.validate();
  if (n_pages < 1)
    throw std::invalid_argument("PageStorage: n_pages must be at least 1, got " + std::to_string(n_pages));
  if (page_size < 1)
    throw std::invalid_argument("PageStorage: page_size must be at least 1, got " + std::to_string(page_size));
  return config;
}

}  // namespace

PageStorage::PageStorage(const ModelConfig& config, int n_pages, int page_size)
    : kv_dim_(validated(config, n_pages, page_size).kv_dim()),
      keys_({size_t(config.n_layers), size_t(n_pages), size_t(page_size), size_t(config.n_kv_heads),
             size_t(config.head_dim())}),
      values_(keys_.shape()) {}

}  // namespace astrai
