// DevicePageCache: PageManager bookkeeping over device storage.
#include "cuda/device_page_cache.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "cuda/bf16_host.h"
#include "cuda/cuda_check.h"

namespace astrai::cuda {
namespace {

int validated_context(const ModelConfig& config) {
  config.validate();  // throws std::invalid_argument
  return config.max_seq_len;
}

// The padding slots' rows of every layer, of keys or of values.
size_t padding_bytes(const ModelConfig& c, DType dtype) {
  return size_t(c.n_layers) * size_t(DevicePageCache::kPaddingSlots) * size_t(c.kv_dim()) * dtype_size(dtype);
}

}  // namespace

size_t DevicePageCache::bytes_needed(const ModelConfig& c, int n_pages, int page_size, DType dtype) {
  return 2 * size_t(c.n_layers) * size_t(n_pages) * size_t(page_size) * size_t(c.kv_dim()) * dtype_size(dtype);
}

DevicePageCache::DevicePageCache(const ModelConfig& config, int n_pages, int page_size, DType dtype)
    : PagedKVCache(validated_context(config), n_pages, page_size),
      config_(config),
      dtype_(dtype),
      keys_(bytes_needed(config, n_pages, page_size, dtype) / 2 + padding_bytes(config, dtype),
            "the KV cache keys (" + std::to_string(n_pages) + " pages of " + std::to_string(page_size) + ")"),
      values_(bytes_needed(config, n_pages, page_size, dtype) / 2 + padding_bytes(config, dtype),
              "the KV cache values"),
      view_(*this) {}

DevicePageCache::~DevicePageCache() {
  if (destroy_listener_) destroy_listener_();
}

int DevicePageCache::pages_that_fit(const ModelConfig& config, int page_size, DType dtype, size_t free_bytes,
                                    double fraction) {
  const size_t per_page = bytes_needed(config, 1, page_size, dtype);
  double pages = double(free_bytes) * fraction / double(per_page);
#ifdef ASTRAI_CUDA_EMULATED
  // The emulated device reports 16 GiB, but 90% of it would take 14 GiB of
  // the machine's RAM; the small models it serves in tests need far less.
  constexpr size_t kEmulatedCacheBytes = size_t(256) << 20;
  const int one_context = (config.max_seq_len + page_size - 1) / page_size;
  pages = std::min(pages, std::max(double(kEmulatedCacheBytes / per_page), double(one_context)));
#endif
  return pages > 2e9 ? 2000000000 : int(pages);
}

void* DevicePageCache::element(const DeviceBuffer& buffer, int layer) const {
  const size_t layer_rows = size_t(n_pages()) * size_t(page_size()) + size_t(kPaddingSlots);
  const size_t layer_elements = layer_rows * size_t(config_.kv_dim());
  return static_cast<char*>(buffer.get()) + size_t(layer) * layer_elements * dtype_size(dtype_);
}

void DevicePageCache::copy_page(PagePool pool, int from, int to) {
  if (pool != PagePool::Full) throw std::logic_error("DevicePageCache: a sliding pool page copy, but it has no sliding pool");
  const size_t page_bytes = size_t(page_size()) * size_t(config_.kv_dim()) * dtype_size(dtype_);
  for (int layer = 0; layer < config_.n_layers; ++layer) {
    for (void* base : {layer_keys(layer), layer_values(layer)}) {
      char* rows = static_cast<char*>(base);
      ASTRAI_CUDA_CHECK(cudaMemcpy(rows + size_t(to) * page_bytes, rows + size_t(from) * page_bytes, page_bytes,
                                   cudaMemcpyDeviceToDevice));
    }
  }
  if (page_copy_listener_) page_copy_listener_(from, to);
}

namespace {

// The slot (page * page_size + offset) of (layer, seq, pos), with PageCacheView's checks.
size_t locate(const DevicePageCache& cache, int layer, int seq, int pos, bool for_write) {
  if (layer < 0 || layer >= cache.config().n_layers)
    throw std::out_of_range("DevicePageCache: layer " + std::to_string(layer) + " is outside [0, " +
                            std::to_string(cache.config().n_layers) + ")");
  const PageManager::RowAddress at = cache.pages().locate(seq, pos, for_write);
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
