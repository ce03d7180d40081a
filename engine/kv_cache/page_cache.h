// The paged KV cache: K/V live in fixed-size pages from a shared pool, each
// task has a page table, and full pages whose tokens have been committed are
// registered as prefixes, so a new prompt that starts with the same tokens
// maps those pages instead of recomputing them (see docs/kv-cache.md).
//
// Prefix-hit rule: only full pages are shared, and a hit never covers the
// last prompt token (the forward pass must run on at least one token to
// produce logits), so hit = floor((len - 1) / P) * P at most. Every position
// the task still computes therefore falls in a page of its own, and shared
// pages are never written (PageCacheView enforces it).
#pragma once

#include <optional>
#include <span>

#include "engine/kv_cache/kv_cache.h"
#include "engine/kv_cache/page_cache_view.h"
#include "engine/kv_cache/page_pool.h"
#include "engine/kv_cache/page_storage.h"
#include "engine/kv_cache/task_table.h"
#include "reference/model_config.h"

namespace astrai {

class PageCache final : public KVCache {
 public:
  static constexpr int kDefaultPageSize = 16;

  // Throws std::invalid_argument for an invalid config, n_pages < 1 or
  // page_size < 1. `hash` is injectable so tests can force collisions.
  PageCache(const ModelConfig& config, int n_pages, int page_size = kDefaultPageSize,
            PrefixHash hash = default_prefix_hash);
  PageCache(const PageCache&) = delete;
  PageCache& operator=(const PageCache&) = delete;

  std::optional<int> admit(int task_id, std::span<const int> prompt) override;
  bool reserve(int task_id, int n_tokens) override;
  void commit(int task_id, std::span<const int> tokens_so_far) override;
  void release(int task_id) override;
  bool has_task(int task_id) const override { return tasks_.contains(task_id); }
  KVCacheView& view() override { return view_; }
  KVCacheStats stats() const override;

  int page_size() const { return pool_.page_size(); }
  int n_pages() const { return pool_.n_pages(); }
  // Pages a new task with this prompt needs beyond the free and cached ones
  // it could get now (0: admit() would succeed). For scheduler decisions.
  int pages_short_for(std::span<const int> prompt) const;
  // The task's page table (for executors that address pages themselves).
  // Throws std::invalid_argument for an unknown task.
  std::span<const int> page_table(int task_id) const { return tasks_.at(task_id).pages; }
  int cached_tokens(int task_id) const { return tasks_.at(task_id).n_cached_tokens; }

  const PagePool& pool() const { return pool_; }
  const PageStorage& storage() const { return storage_; }
  // Pool invariants plus: every page's reference count equals the number of
  // page tables listing it, and a page listed twice is a registered prefix.
  // Throws std::logic_error; for tests.
  void check_invariants() const;

 private:
  struct PrefixPlan {
    std::vector<int> hit_pages;  // registered pages to share
    int new_pages = 0;           // pages to allocate after them
    int short_by = 0;            // pages missing now (0: the plan fits)
  };
  PrefixPlan plan_admission(std::span<const int> prompt) const;
  void check_length(int n_tokens, const char* what) const;

  int max_seq_len_;
  PagePool pool_;
  PageStorage storage_;
  TaskTable tasks_;
  PageCacheView view_;
};

}  // namespace astrai
