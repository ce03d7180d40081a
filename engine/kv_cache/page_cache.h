// The paged KV cache on the host: PageManager's bookkeeping (page tables,
// prefix sharing, LRU eviction) over K/V stored page by page, as
// [n_layers, n_pages, page_size, n_kv_heads, head_dim] float tensors, so the
// row of (layer, page, offset) is kv_dim contiguous floats.
//
// The forward pass finds position `pos` of task `seq` at offset pos % P of
// page page_table[pos / P] (P = page size). Writes into a registered
// (shareable) page are refused with std::logic_error: the prefix-hit rule
// leaves every position the forward pass still has to compute in a page of
// the task's own, so such a write is a caller bug that would corrupt other
// tasks' prefixes. See docs/kv-cache.md.
#pragma once

#include <optional>
#include <span>
#include <utility>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "engine/kv_cache/kv_cache.h"
#include "engine/kv_cache/page_manager.h"
#include "reference/model_config.h"

namespace astrai {

// The KVCache life cycle of a PageManager: what every paged cache shares,
// whatever holds its rows (PageCache here, cuda::DevicePageCache on the GPU).
class PagedKVCache : public KVCache {
 public:
  PagedKVCache(int max_seq_len, int n_pages, int page_size, PrefixHash hash = default_prefix_hash)
      : pages_(max_seq_len, n_pages, page_size, std::move(hash)) {}
  std::optional<int> admit(int task_id, std::span<const int> prompt) final { return pages_.admit(task_id, prompt); }
  // Copy-on-write: a shared page the task is about to write into is
  // replaced by a private copy (PageManager::reserve), whose rows the
  // storage copies here before anything is written.
  bool reserve(int task_id, int n_tokens) final {
    std::vector<PageManager::PageCopy> copies;
    if (!pages_.reserve(task_id, n_tokens, &copies)) return false;
    for (const auto& c : copies) copy_page(c.from, c.to);
    return true;
  }
  void commit(int task_id, std::span<const int> tokens) final { pages_.commit(task_id, tokens); }
  bool fork(int parent_id, int child_id, int n_tokens) final {
    pages_.fork(parent_id, child_id, n_tokens);
    return true;  // shares pages only: needs no room
  }
  void release(int task_id) final { pages_.release(task_id); }
  bool has_task(int task_id) const final { return pages_.has_task(task_id); }
  KVCacheStats stats() const final { return pages_.stats(); }
  bool record_events(bool on) final {
    pages_.record_events(on);
    return true;
  }
  std::vector<KVCacheEvent> take_events() final { return pages_.take_events(); }
  std::vector<KVCachedBlock> registered_blocks() const final { return pages_.registered_blocks(); }
  bool reset_prefix_cache() final { return pages_.reset_prefix_cache(); }

  // Page tables, prefix registrations, invariants.
  const PageManager& pages() const { return pages_; }
  int page_size() const { return pages_.page_size(); }
  int n_pages() const { return pages_.n_pages(); }

 protected:
  // Every row of page `from`, every layer, K and V, into page `to`.
  virtual void copy_page(int from, int to) = 0;
  PageManager pages_;
};

class PageCache;

// The forward pass's window on a PageCache.
class PageCacheView final : public KVCacheView {
 public:
  explicit PageCacheView(PageCache& cache) : cache_(cache) {}
  // Throws std::invalid_argument for an unknown task, std::out_of_range for a
  // layer or a position outside the task's reserved pages, std::logic_error
  // for a write into a shared prefix page.
  void write(int layer, int seq, int pos, const float* key, const float* value) override;
  const float* key(int layer, int seq, int pos) const override;
  const float* value(int layer, int seq, int pos) const override;

 private:
  size_t row_offset(int layer, int seq, int pos, bool for_write) const;
  PageCache& cache_;
};

class PageCache final : public PagedKVCache {
 public:
  static constexpr int kDefaultPageSize = 16;

  // Throws std::invalid_argument for an invalid config, n_pages < 1 or
  // page_size < 1. `hash` is injectable so tests can force collisions.
  PageCache(const ModelConfig& config, int n_pages, int page_size = kDefaultPageSize,
            PrefixHash hash = default_prefix_hash);
  PageCache(const PageCache&) = delete;
  PageCache& operator=(const PageCache&) = delete;

  KVCacheView& view() override { return view_; }
  size_t storage_bytes() const override { return (keys_.size() + values_.size()) * sizeof(float); }

  int n_layers() const { return int(keys_.shape(0)); }
  int kv_dim() const { return kv_dim_; }
  const xt::xtensor<float, 5>& keys() const { return keys_; }
  const xt::xtensor<float, 5>& values() const { return values_; }

 private:
  friend class PageCacheView;
  void copy_page(int from, int to) override;
  int kv_dim_;
  xt::xtensor<float, 5> keys_;    // [layer, page, offset, kv_head, head_dim]
  xt::xtensor<float, 5> values_;  // same shape as keys_
  PageCacheView view_;
};

}  // namespace astrai
