// The paged KV cache with its K/V storage on the GPU, driven by the same
// PageManager as the host PageCache (free/held/cached pages, prefix sharing,
// page tables), so prefix hits, eviction and preemption behave exactly as on
// the CPU; only where the K/V rows live differs.
//
// Storage: keys and values, each [n_layers, n_pages * page_size +
// kPaddingSlots, kv_dim] in the cache dtype; the row of (layer, page, offset)
// is kv_dim contiguous elements at (layer * layer_rows + page * page_size +
// offset) * kv_dim. With a sliding pool (sliding_pages > 0 and a config with
// sliding-window layers) the sliding layers' rows are a second such pair of
// buffers over that pool's pages, and the first pair holds the full layers
// only: layer_keys(layer) finds either. The kPaddingSlots rows after each layer's pages belong to
// no page: the padding rows of a CUDA graph's padded batch write their K/V
// there (cuda_executor.cpp), each its own, so that no two blocks of one
// launch write one row and no page's rows change.
//
// The CudaExecutor recognises this cache's view (DevicePageCacheView), reads
// the page tables from pages() and writes and reads the device rows itself.
// The view's own write/key/value copy single rows between host and device
// (slow; for tests and for running the CPU reference on this cache).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "cuda/device_buffer.h"
#include "cuda/dtype.h"
#include "engine/kv_cache/kv_cache.h"
#include "engine/kv_cache/page_cache.h"
#include "reference/model_config.h"

namespace astrai::cuda {

class DevicePageCache;

class DevicePageCacheView final : public KVCacheView {
 public:
  explicit DevicePageCacheView(DevicePageCache& cache) : cache_(cache) {}
  // Same checks and errors as PageCacheView: std::invalid_argument for an
  // unknown task, std::out_of_range outside its reserved positions,
  // std::logic_error for a write into a shared prefix page.
  void write(int layer, int seq, int pos, const float* key, const float* value) override;
  // A host copy of the row (converted to float), valid until the next call
  // of the same function on this view.
  const float* key(int layer, int seq, int pos) const override;
  const float* value(int layer, int seq, int pos) const override;

  DevicePageCache& cache() const { return cache_; }

 private:
  DevicePageCache& cache_;
  mutable std::vector<float> key_row_, value_row_;
};

class DevicePageCache final : public PagedKVCache {
 public:
  // Throws std::invalid_argument for an invalid config, n_pages < 1 or
  // page_size < 1, and std::runtime_error (saying how much was needed) when
  // the storage does not fit in device memory.
  // `sliding_pages` > 0: the config's sliding layers get a pool of their own
  // (page_cache.h's SlidingPool, aligned to the attention kernels' tile).
  DevicePageCache(const ModelConfig& config, int n_pages, int page_size, DType dtype, int sliding_pages = 0);
  ~DevicePageCache() override;

  KVCacheView& view() override { return view_; }
  // Device memory: this cache's, and as much again on each tensor-parallel
  // rank that mirrors its pages (set_mirrors).
  size_t storage_bytes() const override {
    return (keys_.bytes() + values_.bytes() + sliding_keys_.bytes() + sliding_values_.bytes()) * size_t(1 + mirrors_);
  }
  size_t sliding_storage_bytes() const override {
    return (sliding_keys_.bytes() + sliding_values_.bytes()) * size_t(1 + mirrors_);
  }
  void set_mirrors(int other_ranks) { mirrors_ = other_ranks; }

  const ModelConfig& config() const { return config_; }
  DType dtype() const { return dtype_; }
  // Device storage of one layer: row `slot` = page * page_size + offset,
  // the page being one of the layer's pool (layer_pool()).
  void* layer_keys(int layer) const { return element(layer, false); }
  void* layer_values(int layer) const { return element(layer, true); }
  // A pool's storage (null for a pool with no layers), e.g. to tell caches apart.
  const void* pool_keys(PagePool pool) const { return (pool == PagePool::Full ? keys_ : sliding_keys_).get(); }
  const void* pool_values(PagePool pool) const { return (pool == PagePool::Full ? values_ : sliding_values_).get(); }
  // Slots no page owns (see above): kPaddingSlots of them in each pool, from first_padding_slot().
  static constexpr int kPaddingSlots = 16;
  int first_padding_slot(PagePool pool = PagePool::Full) const {
    return (pool == PagePool::Full ? n_pages() : sliding_->n_pages()) * page_size();
  }
  // Bytes of device storage of the pages (the padding slots add
  // 2 * n_layers * kPaddingSlots rows: 2 MB for Llama-3-8B in bf16).
  // With sliding_pages > 0 (and sliding layers), the full layers' n_pages
  // and the sliding layers' sliding_pages.
  static size_t bytes_needed(const ModelConfig& config, int n_pages, int page_size, DType dtype, int sliding_pages = 0);
  // Called after this cache copies a page (copy-on-write in reserve()): a
  // tensor-parallel rank 0 tells the other ranks, whose caches hold the same
  // pages' rows of their own heads, to copy it too (cuda/tensor_parallel/).
  void on_page_copy(std::function<void(int from, int to)> listener) { page_copy_listener_ = std::move(listener); }
  // Called when this cache is destroyed (a tensor-parallel rank 0 tells the
  // other ranks to free their caches of the same pages).
  void on_destroy(std::function<void()> listener) { destroy_listener_ = std::move(listener); }
  // Copies page `from`'s rows into page `to` (a rank other than 0, told by rank 0).
  void copy_page_rows(int from, int to) { copy_page(PagePool::Full, from, to); }
  // Pages of `page_size` tokens a cache of `config` may take in `fraction`
  // of `free_bytes` of device memory. On the emulated device, whose memory
  // is host memory (cudaMalloc fills it with NaN bytes at once), at most 256
  // MiB of pages, or one whole context if that is more.
  // With `running_tasks` > 0 and sliding layers, the full layers' pages
  // when the sliding layers take sliding_pages_for(..., running_tasks) of
  // their own in the same memory (more pages than one pool would get).
  static int pages_that_fit(const ModelConfig& config, int page_size, DType dtype, size_t free_bytes,
                            double fraction, int running_tasks = 0);

 private:
  void* element(int layer, bool values) const;
  // Device to device, every layer, K and V. This cache keeps every layer in
  // the full pool (no SlidingPool), so `pool` is always Full.
  void copy_page(PagePool pool, int from, int to) override;

  ModelConfig config_;
  DType dtype_;
  DeviceBuffer keys_;                 // the full layers'
  DeviceBuffer values_;
  DeviceBuffer sliding_keys_;         // the sliding layers' (empty without a sliding pool)
  DeviceBuffer sliding_values_;
  DevicePageCacheView view_;
  std::function<void(int, int)> page_copy_listener_;
  std::function<void()> destroy_listener_;
  int mirrors_ = 0;
};

}  // namespace astrai::cuda
