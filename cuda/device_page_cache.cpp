// DevicePageCache: PageManager bookkeeping over device storage.
#include "cuda/device_page_cache.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "cuda/bf16_host.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels/kernels.h"

namespace astrai::cuda {
namespace {

int validated_context(const ModelConfig& config) {
  config.validate();  // throws std::invalid_argument
  return config.max_seq_len;
}

// The sliding layers' pool of a cache of `sliding_pages` (nullopt: one pool).
std::optional<SlidingPool> device_sliding_pool(const ModelConfig& c, int sliding_pages) {
  return sliding_pages > 0 ? sliding_pool_for(c, sliding_pages, kAttentionTile) : std::nullopt;
}

// Layers in the sliding pool (0 without one).
int sliding_layers(const ModelConfig& c, int sliding_pages) {
  if (!device_sliding_pool(c, sliding_pages)) return 0;
  int n = 0;
  for (int l = 0; l < c.n_layers; ++l) n += c.sliding(l);
  return n;
}

// Bytes of one of keys or values for `layers` layers of `pages` pages, padding slots included.
size_t pool_bytes(const ModelConfig& c, int layers, int pages, int page_size, DType dtype) {
  return size_t(layers) * (size_t(pages) * size_t(page_size) + size_t(DevicePageCache::kPaddingSlots)) *
         size_t(c.kv_dim()) * dtype_size(dtype);
}

}  // namespace

size_t DevicePageCache::bytes_needed(const ModelConfig& c, int n_pages, int page_size, DType dtype, int sliding_pages) {
  const int sliding = sliding_layers(c, sliding_pages);
  const size_t row = size_t(page_size) * size_t(c.kv_dim()) * dtype_size(dtype);
  return 2 * row * (size_t(c.n_layers - sliding) * size_t(n_pages) + size_t(sliding) * size_t(sliding_pages));
}

DevicePageCache::DevicePageCache(const ModelConfig& config, int n_pages, int page_size, DType dtype, int sliding_pages)
    : PagedKVCache(validated_context(config), n_pages, page_size, default_prefix_hash,
                   device_sliding_pool(config, sliding_pages)),
      config_(config),
      dtype_(dtype),
      view_(*this) {
  assign_layers(config);
  const int n_full = pool_layers(PagePool::Full), n_sliding = pool_layers(PagePool::Sliding);
  const std::string pages_text = " (" + std::to_string(n_pages) + " pages of " + std::to_string(page_size) + ")";
  keys_ = DeviceBuffer(pool_bytes(config, n_full, n_pages, page_size, dtype), "the KV cache keys" + pages_text);
  values_ = DeviceBuffer(keys_.bytes(), "the KV cache values");
  if (!sliding_) return;
  const std::string sliding_text = " of the sliding layers (" + std::to_string(sliding_->n_pages()) + " pages)";
  sliding_keys_ = DeviceBuffer(pool_bytes(config, n_sliding, sliding_->n_pages(), page_size, dtype),
                               "the KV cache keys" + sliding_text);
  sliding_values_ = DeviceBuffer(sliding_keys_.bytes(), "the KV cache values" + sliding_text);
}

DevicePageCache::~DevicePageCache() {
  if (destroy_listener_) destroy_listener_();
}

int DevicePageCache::pages_that_fit(const ModelConfig& config, int page_size, DType dtype, size_t free_bytes,
                                    double fraction, int running_tasks) {
  const int one_context = (config.max_seq_len + page_size - 1) / page_size;
  double budget = double(free_bytes) * fraction;
#ifdef ASTRAI_CUDA_EMULATED
  // The emulated device reports 16 GiB, but 90% of it would take 14 GiB of
  // the machine's RAM; the small models it serves in tests need far less.
  constexpr size_t kEmulatedCacheBytes = size_t(256) << 20;
  budget = std::min(budget, std::max(double(kEmulatedCacheBytes),
                                     double(bytes_needed(config, one_context, page_size, dtype))));
#endif
  const double per_page = double(bytes_needed(config, 1, page_size, dtype));  // every layer
  double pages = budget / per_page;
  // With a sliding pool of K pages the full layers get (budget - K * sliding
  // page) / full page, when that is at least K (else both pools get the same
  // count, no more than one pool would).
  const int sliding = running_tasks > 0 ? sliding_layers(config, 1) : 0;
  if (sliding > 0 && sliding < config.n_layers) {
    const double sliding_page = per_page * sliding / config.n_layers, full_page = per_page - sliding_page;
    const int most = pages > 2e9 ? 2000000000 : int(pages);
    const double k = sliding_pages_for(config, std::max(most, one_context), page_size, running_tasks, kAttentionTile);
    pages = std::max(pages, (budget - k * sliding_page) / full_page);
  }
  return pages > 2e9 ? 2000000000 : int(pages);
}

void* DevicePageCache::element(int layer, bool values) const {
  const bool sliding = layer_pool_.at(size_t(layer)) == PagePool::Sliding;
  const DeviceBuffer& buffer = sliding ? (values ? sliding_values_ : sliding_keys_) : (values ? values_ : keys_);
  const int pool_pages = sliding ? sliding_->n_pages() : n_pages();
  const size_t layer_rows = size_t(pool_pages) * size_t(page_size()) + size_t(kPaddingSlots);
  const size_t layer_elements = layer_rows * size_t(config_.kv_dim());
  return static_cast<char*>(buffer.get()) + size_t(layer_index_[size_t(layer)]) * layer_elements * dtype_size(dtype_);
}

void DevicePageCache::copy_page(PagePool pool, int from, int to) {
  const size_t page_bytes = size_t(page_size()) * size_t(config_.kv_dim()) * dtype_size(dtype_);
  for (int layer = 0; layer < config_.n_layers; ++layer) {
    if (layer_pool_[size_t(layer)] != pool) continue;
    for (void* base : {layer_keys(layer), layer_values(layer)}) {
      char* rows = static_cast<char*>(base);
      ASTRAI_CUDA_CHECK(cudaMemcpy(rows + size_t(to) * page_bytes, rows + size_t(from) * page_bytes, page_bytes,
                                   cudaMemcpyDeviceToDevice));
    }
  }
  if (!page_copy_listener_) return;
  // Tensor-parallel ranks mirror one pool only (cuda_backend.cpp makes their caches without a sliding pool).
  if (pool != PagePool::Full) throw std::logic_error("DevicePageCache: a sliding page copy to mirror on other ranks");
  page_copy_listener_(from, to);
}

namespace {

// The slot (page * page_size + offset) of (layer, seq, pos), with PageCacheView's checks.
size_t locate(const DevicePageCache& cache, int layer, int seq, int pos, bool for_write) {
  if (layer < 0 || layer >= cache.config().n_layers)
    throw std::out_of_range("DevicePageCache: layer " + std::to_string(layer) + " is outside [0, " +
                            std::to_string(cache.config().n_layers) + ")");
  const PageManager::RowAddress at = cache.layer_pool(layer) == PagePool::Full
                                        ? cache.pages().locate(seq, pos, for_write)
                                        : cache.sliding_pages()->locate(seq, pos, for_write);
  return size_t(at.page) * size_t(cache.page_size()) + size_t(at.offset);
}

void copy_row_to_device(void* layer_base, size_t slot, const float* row, int kv_dim, DType dtype) {
  char* dst = static_cast<char*>(layer_base) + slot * size_t(kv_dim) * dtype_size(dtype);
  if (dtype == DType::Float32) {
    ASTRAI_CUDA_CHECK(cudaMemcpy(dst, row, size_t(kv_dim) * 4, cudaMemcpyHostToDevice));
    return;
  }
  std::vector<uint16_t> bits(static_cast<size_t>(kv_dim));
  for (int i = 0; i < kv_dim; ++i) bits[size_t(i)] = float_to_bf16_bits(row[i]);
  ASTRAI_CUDA_CHECK(cudaMemcpy(dst, bits.data(), bits.size() * 2, cudaMemcpyHostToDevice));
}

void copy_row_to_host(const void* layer_base, size_t slot, std::vector<float>& row, int kv_dim, DType dtype) {
  const char* src = static_cast<const char*>(layer_base) + slot * size_t(kv_dim) * dtype_size(dtype);
  row.resize(size_t(kv_dim));
  if (dtype == DType::Float32) {
    ASTRAI_CUDA_CHECK(cudaMemcpy(row.data(), src, size_t(kv_dim) * 4, cudaMemcpyDeviceToHost));
    return;
  }
  std::vector<uint16_t> bits(static_cast<size_t>(kv_dim));
  ASTRAI_CUDA_CHECK(cudaMemcpy(bits.data(), src, bits.size() * 2, cudaMemcpyDeviceToHost));
  for (int i = 0; i < kv_dim; ++i) row[size_t(i)] = bf16_bits_to_float(bits[size_t(i)]);
}

}  // namespace

void DevicePageCacheView::write(int layer, int seq, int pos, const float* key, const float* value) {
  const size_t slot = locate(cache_, layer, seq, pos, true);
  const int kv_dim = cache_.config().kv_dim();
  copy_row_to_device(cache_.layer_keys(layer), slot, key, kv_dim, cache_.dtype());
  copy_row_to_device(cache_.layer_values(layer), slot, value, kv_dim, cache_.dtype());
}

const float* DevicePageCacheView::key(int layer, int seq, int pos) const {
  copy_row_to_host(cache_.layer_keys(layer), locate(cache_, layer, seq, pos, false), key_row_,
                   cache_.config().kv_dim(), cache_.dtype());
  return key_row_.data();
}

const float* DevicePageCacheView::value(int layer, int seq, int pos) const {
  copy_row_to_host(cache_.layer_values(layer), locate(cache_, layer, seq, pos, false), value_row_,
                   cache_.config().kv_dim(), cache_.dtype());
  return value_row_.data();
}

}  // namespace astrai::cuda
