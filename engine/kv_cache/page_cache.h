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

#include <algorithm>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "engine/kv_cache/kv_cache.h"
#include "engine/kv_cache/page_manager.h"
#include "engine/kv_cache/window_page_manager.h"
#include "reference/model_config.h"

namespace astrai {

// Which pages a row lives in: the full layers' (PageManager) or, for a model
// with sliding-window layers, those layers' own (WindowPageManager).
enum class PagePool { Full, Sliding };

// The sliding layers' pool of a PagedKVCache: `n_pages` pages, a query
// reading its last `window` positions, rows read from `align`-aligned
// starts (window_page_manager.h).
struct SlidingPool {
  int n_pages = 0;
  int window = 0;
  int align = 1;
};

// The KVCache life cycle of a PageManager (and, with a SlidingPool, of the
// sliding layers' WindowPageManager beside it): what every paged cache
// shares, whatever holds its rows (PageCache here, cuda::DevicePageCache on
// the GPU). Every operation is all-or-nothing across both pools.
class PagedKVCache : public KVCache {
 public:
  PagedKVCache(int max_seq_len, int n_pages, int page_size, PrefixHash hash = default_prefix_hash,
               std::optional<SlidingPool> sliding = std::nullopt);
  // With sliding layers the hit is the longest prefix hit whose window the
  // sliding pool still holds too (docs/kv-cache.md "Sliding layers").
  std::optional<int> admit(int task_id, std::span<const int> prompt) final;
  // Copy-on-write: a shared page the task is about to write into is
  // replaced by a private copy (PageManager::reserve), whose rows the
  // storage copies here before anything is written.
  bool reserve(int task_id, int n_tokens) final;
  void commit(int task_id, std::span<const int> tokens) final;
  // Shares pages only, so it needs no room; false only when the sliding
  // layers have dropped a page the child would read (a fork from before the
  // parent's window).
  bool fork(int parent_id, int child_id, int n_tokens) final;
  void release(int task_id) final;
  bool has_task(int task_id) const final { return pages_.has_task(task_id); }
  // The full layers' pages (KVCacheStats::sliding: the sliding layers').
  KVCacheStats stats() const final;
  bool record_events(bool on) final {
    pages_.record_events(on);
    return true;
  }
  std::vector<KVCacheEvent> take_events() final { return pages_.take_events(); }
  std::vector<KVCachedBlock> registered_blocks() const final { return pages_.registered_blocks(); }
  bool reset_prefix_cache() final;

  // Page tables, prefix registrations, invariants.
  const PageManager& pages() const { return pages_; }
  // The sliding layers' pages; null without sliding layers.
  const WindowPageManager* sliding_pages() const { return sliding_.get(); }
  int page_size() const { return pages_.page_size(); }
  int n_pages() const { return pages_.n_pages(); }
  // Both pools' invariants (PageManager::check_invariants, WindowPageManager::check_invariants).
  void check_invariants() const;

  // Which pool holds a layer's rows (the config's sliding layers are in the
  // sliding pool when there is one), and its index among that pool's layers.
  PagePool layer_pool(int layer) const { return layer_pool_.at(size_t(layer)); }
  int layer_index(int layer) const { return layer_index_.at(size_t(layer)); }
  int pool_layers(PagePool pool) const { return int(std::count(layer_pool_.begin(), layer_pool_.end(), pool)); }

 protected:
  // Fills layer_pool() and layer_index() for `config`: the storage's constructor calls it.
  void assign_layers(const ModelConfig& config);
  std::vector<PagePool> layer_pool_;
  std::vector<int> layer_index_;
  // Every row of page `from` of `pool`, every layer of the pool, K and V, into page `to`.
  virtual void copy_page(PagePool pool, int from, int to) = 0;
  PageManager pages_;
  std::unique_ptr<WindowPageManager> sliding_;
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
  struct Row {
    float* key;
    float* value;
  };
  Row row(int layer, int seq, int pos, bool for_write) const;
  PageCache& cache_;
};

class PageCache final : public PagedKVCache {
 public:
  static constexpr int kDefaultPageSize = 16;

  // Throws std::invalid_argument for an invalid config, n_pages < 1 or
  // page_size < 1. `hash` is injectable so tests can force collisions.
  // `sliding_pages` > 0 gives the config's sliding layers (a window shorter
  // than the context) a pool of their own of that many pages; 0 keeps every
  // layer in the one pool of n_pages.
  PageCache(const ModelConfig& config, int n_pages, int page_size = kDefaultPageSize,
            PrefixHash hash = default_prefix_hash, int sliding_pages = 0);
  PageCache(const PageCache&) = delete;
  PageCache& operator=(const PageCache&) = delete;

  KVCacheView& view() override { return view_; }
  size_t storage_bytes() const override { return storage_bytes(PagePool::Full) + storage_bytes(PagePool::Sliding); }
  size_t sliding_storage_bytes() const override { return storage_bytes(PagePool::Sliding); }
  size_t storage_bytes(PagePool pool) const {
    const Rows& r = rows(pool);
    return (r.keys.size() + r.values.size()) * sizeof(float);
  }

  int n_layers() const { return int(layer_pool_.size()); }
  int kv_dim() const { return kv_dim_; }

 private:
  friend class PageCacheView;
  // One pool's rows: [pool layer, page, offset, kv_head, head_dim].
  struct Rows {
    xt::xtensor<float, 5> keys;
    xt::xtensor<float, 5> values;
  };
  const Rows& rows(PagePool pool) const { return pool == PagePool::Full ? full_ : sliding_rows_; }
  Rows& rows(PagePool pool) { return pool == PagePool::Full ? full_ : sliding_rows_; }
  void copy_page(PagePool pool, int from, int to) override;
  int kv_dim_;
  Rows full_;
  Rows sliding_rows_;
  PageCacheView view_;
};

// The pool for the sliding layers of `config` when it has any with a window
// shorter than its context (else nullopt): n_pages for them, rows read from
// `align`-aligned starts (1 for the reference; the CUDA kernels' tile).
std::optional<SlidingPool> sliding_pool_for(const ModelConfig& config, int n_pages, int align = 1);

// Pages for the sliding layers' pool beside `full_pages` for the full layers
// (0: the config has no sliding layers, one pool): room for one whole prompt
// in prefill (admission takes a page for every prompt position; each chunk's
// commit gives back what the window has passed) plus a window for each other
// of `running_tasks`, at most full_pages.
int sliding_pages_for(const ModelConfig& config, int full_pages, int page_size, int running_tasks, int align = 1);

}  // namespace astrai
