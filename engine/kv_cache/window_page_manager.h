// The pages of a model's sliding-window layers (Gemma 3's five layers of
// six, gpt-oss's every other layer, Mistral v0.1's all of them). A query at
// position q of such a layer reads only positions q - window + 1 .. q, so
// once a task has committed position n - 1 its pages wholly before
// first_kept(n) are never read by it again: commit() gives them back. A task
// then holds about a window's worth of pages on these layers however long
// its context. A PagedKVCache keeps one of these next to its PageManager
// (the full layers' pages) and drives both through one life cycle; see
// docs/kv-cache.md "Sliding layers".
//
// Page table: entry i holds positions [iP, (i+1)P), or kDropped once the
// window has passed it (entries are only ever dropped from the front).
//
// Prefix hits. A hit of h full-layer pages reuses, on the sliding layers,
// only the pages the next query reads: indices first_kept(hP) / P .. h - 1.
// Such a page is found by its tag, the full layers' page that holds the same
// prefix: PageManager's match has verified that prefix token for token, so a
// tag, unlike a bare hash, can never hand out another prompt's rows. commit()
// tags a task's page when the full layers register the page at its index;
// forget() unties a tag when the full layers evict (unregister) that page.
//
// Page states are PageManager's: Free (free mask), Held (reference count >= 1,
// one per page table listing it), Cached (tagged and held by none, on an LRU
// list, evicted least recently used first). Copy-on-write as PageManager's:
// reserve() replaces a page the task is about to write that another task holds
// or that is tagged.
//
// Alignment: the CUDA attention kernels start a windowed row's walk at
// first rounded down to their tile, and read those rows too (masked), so
// first_kept() rounds down to `align` (1 for the reference forward pass).
#pragma once

#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/kv_cache/kv_cache.h"
#include "engine/kv_cache/page_lru.h"
#include "engine/kv_cache/page_manager.h"

namespace astrai {

class WindowPageManager {
 public:
  static constexpr int kDropped = -1;

  // Throws std::invalid_argument when a count or size is below 1.
  WindowPageManager(int max_seq_len, int n_pages, int page_size, int window, int align);

  // The first position a query at any position >= n reads: max(0, n - window
  // + 1) rounded down to `align`.
  int first_kept(int n) const;
  // Pages one task may hold at once while it decodes: its window's, rounded
  // out to pages, plus the page of the next position.
  int window_pages() const { return window_pages(window_, page_size_, align_); }
  // The same for any pool's shape (sizing a pool before it exists).
  static int window_pages(int window, int page_size, int align);

  // The sliding pages a prefix hit of the full pages full_hit[0, h) reuses
  // (for indices first_kept(h * P) / P .. h - 1), or nullopt when one of them
  // is not cached here.
  std::optional<std::vector<int>> hit_pages(std::span<const int> full_hit) const;
  // Pages missing now to admit a prompt of `len` tokens with a hit of
  // `hit_tokens` (a multiple of P) reusing `hit` (from hit_pages); 0: it fits.
  int short_by(int len, int hit_tokens, std::span<const int> hit) const;
  // Admits the task; the caller checked short_by() == 0 and that the task is new.
  void admit(int task_id, int len, int hit_tokens, std::span<const int> hit);

  // As PageManager::reserve (copy-on-write included).
  // Whether reserve(task_id, n_tokens) would find room.
  bool can_reserve(int task_id, int n_tokens) const;
  bool reserve(int task_id, int n_tokens, std::vector<PageManager::PageCopy>* copies);
  // Whether the parent still holds every page a child of n_tokens would read.
  bool can_fork(int parent_id, int n_tokens) const;
  // The child shares the parent's pages that a query at n_tokens reads; the
  // caller checked can_fork.
  void fork(int parent_id, int child_id, int n_tokens);
  // Positions [0, n_tokens) are committed; full_pages is the task's page table
  // on the full layers and its first full_registered entries are registered
  // prefixes there: the task's pages at those indices are tagged with them
  // (unless another page already holds that tag), then the pages the window
  // has passed are dropped.
  void commit(int task_id, int n_tokens, std::span<const int> full_pages, int full_registered);
  void release(int task_id);
  // The full layers evicted `full_page`: a sliding page tagged with it is untied
  // (and freed when no task holds it).
  void forget(int full_page);
  // Every cached page becomes free (PagedKVCache::reset_prefix_cache, with no task admitted).
  void reset();

  bool has_task(int task_id) const { return tasks_.contains(task_id); }
  std::span<const int> page_table(int task_id) const { return task(task_id).pages; }
  // As PageManager::locate; also std::out_of_range for a position whose page
  // the window has passed and dropped.
  PageManager::RowAddress locate(int task_id, int pos, bool for_write) const;

  KVCacheStats stats() const;
  int n_pages() const { return int(pages_.size()); }
  int page_size() const { return page_size_; }
  int window() const { return window_; }
  int align() const { return align_; }
  // Pages a task holds (its page table's entries not dropped).
  int held_by(int task_id) const;
  PageState state(int page) const;
  // The full page a sliding page is tagged with, or -1.
  int tag(int page) const { return pages_.at(size_t(page)).tag; }
  // Throws std::logic_error naming the first broken invariant: reference
  // counts against page tables, the free count, the LRU list, the tag index.
  void check_invariants() const;

 private:
  struct Page {
    int ref_count = 0;
    bool free = true;
    int tag = -1;  // the full-layer page holding the same prefix; -1: untagged
  };
  struct Task {
    std::vector<int> pages;  // kDropped for entries the window has passed
    int n_committed = 0;
    int n_dropped = 0;       // leading entries dropped
    int n_tag_checked = 0;   // leading entries already considered for a tag
  };

  const Task& task(int task_id) const;
  Task& task(int task_id) { return const_cast<Task&>(std::as_const(*this).task(task_id)); }
  int n_available() const { return n_free_ + lru_.size(); }
  void check_length(int n_tokens) const;
  // Page-table indices of the pages holding positions [n_committed, n_tokens)
  // that another task holds or that are tagged.
  std::vector<int> pages_to_copy(const Task& t, int n_tokens) const;
  int pages_missing(const Task& t, int n_tokens) const;
  int allocate();
  void share(int page);
  void drop_reference(int page);
  void untag(int page);

  int max_seq_len_, page_size_, window_, align_;
  std::vector<Page> pages_;
  int n_free_ = 0;
  PageLru lru_;  // the Cached pages
  std::unordered_map<int, int> by_tag_;  // full page -> the sliding page tagged with it
  std::unordered_map<int, Task> tasks_;
};

}  // namespace astrai
