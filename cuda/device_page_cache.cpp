// DevicePageCache: PageCache bookkeeping over device storage.
#include "cuda/device_page_cache.h"

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

#include "cuda/bf16_host.h"
#include "cuda/cuda_check.h"

namespace astrai::cuda {
namespace {

// PageCache allocates host storage sized by the config it is given. Its
// bookkeeping needs only max_seq_len, n_pages and page_size, so it gets the
// smallest valid model of the same context: its host storage costs 16 bytes
// per page position instead of the model's full K/V.
ModelConfig bookkeeping_config(const ModelConfig& model) {
  model.validate();
  ModelConfig c;
  c.dim = 2;
  c.hidden_dim = 1;
  c.n_layers = 1;
  c.n_heads = 1;
  c.n_kv_heads = 1;
  c.vocab_size = 1;
  c.max_seq_len = model.max_seq_len;
  return c;
}


}  // namespace

size_t DevicePageCache::bytes_needed(const ModelConfig& c, int n_pages, int page_size, DType dtype) {
  return 2 * size_t(c.n_layers) * size_t(n_pages) * size_t(page_size) * size_t(c.kv_dim()) * dtype_size(dtype);
}

DevicePageCache::DevicePageCache(const ModelConfig& config, int n_pages, int page_size, DType dtype)
    : config_(config),
      dtype_(dtype),
      pages_(bookkeeping_config(config), n_pages, page_size),
      keys_(bytes_needed(config, n_pages, page_size, dtype) / 2,
            "the KV cache keys (" + std::to_string(n_pages) + " pages of " + std::to_string(page_size) + ")"),
      values_(bytes_needed(config, n_pages, page_size, dtype) / 2, "the KV cache values"),
      view_(*this) {}

void* DevicePageCache::element(const DeviceBuffer& buffer, int layer) const {
  const size_t layer_elements = size_t(n_pages()) * size_t(page_size()) * size_t(config_.kv_dim());
  return static_cast<char*>(buffer.get()) + size_t(layer) * layer_elements * dtype_size(dtype_);
}

namespace {

// The device address of (layer, seq, pos), with PageCacheView's checks.
size_t locate(const DevicePageCache& cache, int layer, int seq, int pos, bool for_write) {
  const PageCache& pages = cache.bookkeeping();
  const auto table = pages.page_table(seq);  // throws std::invalid_argument for an unknown task
  const int p = cache.page_size();
  const int reserved = int(table.size()) * p;
  if (layer < 0 || layer >= cache.config().n_layers || pos < 0 || pos >= reserved)
    throw std::out_of_range("DevicePageCache: layer " + std::to_string(layer) + ", position " + std::to_string(pos) +
                            " of task " + std::to_string(seq) + " is outside its " + std::to_string(reserved) +
                            " reserved positions");
  const int page = table[size_t(pos / p)];
  if (for_write && pages.pool().is_registered(page))
    throw std::logic_error("DevicePageCache: position " + std::to_string(pos) + " of task " + std::to_string(seq) +
                           " lies in shared prefix page " + std::to_string(page) + ", which is never written again");
  return size_t(page) * size_t(p) + size_t(pos % p);
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
