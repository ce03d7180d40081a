// The bookkeeping of the paged KV cache, and nothing else: which pages are
// free, how many tasks hold each page, which unheld pages still hold a
// reusable prompt prefix (in least-recently-used order), which pages hold
// which token prefixes, and each task's page table. It holds no K/V: the host
// PageCache and the CUDA DevicePageCache own storage and ask locate() where a
// row lives. See docs/kv-cache.md.
//
// Every page is in exactly one state:
//   Free   - nothing in it; its bit is set in the free mask.
//   Held   - listed by the page tables of ref_count >= 1 tasks.
//   Cached - held by no task, its K/V a registered prefix: on the LRU list,
//            reused by a prompt that starts with the same tokens, or evicted
//            (least recently used first) when an allocation finds no free page.
//
// Prefix index: only full pages are registered. Page i of a sequence is keyed
// by a hash chained over its tokens and every page before it,
//   h_0 = hash(kRootPrefixHash, tokens[0, P)),  h_i = hash(h_{i-1}, tokens[iP, (i+1)P)),
// and every entry keeps its tokens and its parent (the page holding the page
// before it). A match checks both, so a hash collision costs time but can
// never hand out another prompt's pages.
//
// Prefix-hit rule: a hit never covers the last prompt token (the forward pass
// must compute at least one position to produce logits), so it is at most
// floor((len - 1) / P) pages. Every position a task still computes is in a
// page of its own, and registered pages are never written (locate() refuses).
//
// Forks (n choices of one prompt): fork() gives a new task the parent's page
// table for its committed positions, a reference per page, so the prompt is
// held once. The pages may include the parent's last, partial, unregistered
// page; whoever first writes into a page that another task still holds (or
// that is registered) gets a private copy of it in reserve() (copy-on-write),
// which reports the copy for the storage to make. locate() refuses writes
// into a shared page, so one task's writes never show in another's rows.
//
// Eviction order: a task holds every ancestor of a registered page it holds
// and releases its pages last first, so a cached page is always more recently
// used than its cached descendants: the LRU order trims prefixes from their
// ends, and a page is never evicted before the pages registered after it.
//
// Events (kv_events.h), recorded only once record_events(true) is called,
// for a publisher to take after each step: commit() reports the pages it
// registers (one KVBlockStored per commit, the chain in order), eviction the
// page it unregisters (KVBlockRemoved), reset_prefix_cache() KVAllBlocksCleared.
// Those are the only places a page's registration changes.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/kv_cache/kv_cache.h"
#include "engine/kv_cache/kv_events.h"
#include "engine/kv_cache/page_lru.h"

namespace astrai {

// hash(parent_hash, page_tokens) -> chained hash of the prefix ending with this page.
using PrefixHash = std::function<uint64_t(uint64_t parent_hash, std::span<const int> page_tokens)>;
inline constexpr uint64_t kRootPrefixHash = 0x243f6a8885a308d3ULL;  // the "parent hash" of a first page
// Mixes each token into the parent hash with the splitmix64 finalizer.
uint64_t default_prefix_hash(uint64_t parent_hash, std::span<const int> page_tokens);

enum class PageState { Free, Held, Cached };

class PageManager {
 public:
  // Throws std::invalid_argument when max_seq_len, n_pages or page_size is
  // below 1, or the hash function is empty. `hash` is injectable so tests can
  // force collisions.
  PageManager(int max_seq_len, int n_pages, int page_size, PrefixHash hash = default_prefix_hash);

  // The KVCache life cycle (see kv_cache.h for the contract): admit shares the
  // registered pages of the prompt's longest cached prefix and allocates the
  // rest; reserve grows a task; commit registers its full pages as prefixes;
  // release drops its references, last page first.
  // A page whose rows the storage must copy before anything is written:
  // reserve() gave the task `to` in place of the shared page `from`.
  struct PageCopy {
    int from;
    int to;
  };

  // `max_hit_pages` caps the prefix hit (a PagedKVCache with sliding layers
  // takes only as much as those layers can reuse too).
  std::optional<int> admit(int task_id, std::span<const int> prompt, int max_hit_pages = kNoHitCap);
  static constexpr int kNoHitCap = 1 << 30;
  // The registered pages holding the prompt's longest cached prefix that a
  // hit may cover (never its last token): what admit() would share.
  std::vector<int> prefix_hit(std::span<const int> prompt) const;
  // Also makes private every page holding a position in [n_committed,
  // n_tokens) that another task holds or that is registered (copy-on-write),
  // appending the copies to `copies`, which may be null only when no page
  // needs one (else std::logic_error, nothing changed). Room for the copies
  // counts: false, nothing changed, when the new and copied pages do not fit.
  bool reserve(int task_id, int n_tokens, std::vector<PageCopy>* copies = nullptr);
  // A new task `child` holding the K/V of the parent's positions [0, n_tokens)
  // by sharing its pages (one more reference each; no page is allocated, so
  // it cannot run out of room). Throws std::invalid_argument when the child
  // exists, the parent does not, or n_tokens is outside [1, the parent's
  // committed positions].
  void fork(int parent_id, int child_id, int n_tokens);
  void commit(int task_id, std::span<const int> tokens_so_far);
  void release(int task_id);
  bool has_task(int task_id) const { return tasks_.contains(task_id); }
  KVCacheStats stats() const;

  int max_seq_len() const { return max_seq_len_; }
  int n_pages() const { return int(pages_.size()); }
  int page_size() const { return page_size_; }
  // Pages a new task with this prompt needs beyond the free and cached ones
  // it could get now (0: admit() would succeed). For scheduler decisions.
  int pages_short_for(std::span<const int> prompt, int max_hit_pages = kNoHitCap) const;
  // Called with each page whose registration is dropped by eviction (the
  // sliding layers' pages tagged with it are untied: window_page_manager.h).
  void on_unregister(std::function<void(int page)> listener) { unregister_listener_ = std::move(listener); }

  // Drops every registered prefix (vLLM's reset_prefix_cache): false,
  // changing nothing, while any task is admitted (its pages are in use);
  // else every cached page becomes free and KVAllBlocksCleared is recorded.
  bool reset_prefix_cache();

  // KV cache events: off by default (nothing is kept); when on, the events
  // since the last take_events(), oldest first.
  void record_events(bool on);
  std::vector<KVCacheEvent> take_events() { return std::exchange(events_, {}); }
  // Every registered page, each after its parent (so a replay in this order
  // meets every parent first).
  std::vector<KVCachedBlock> registered_blocks() const;

  // The task's page table: page_table[i] holds positions [i*P, (i+1)*P).
  // Throws std::invalid_argument for an unknown task.
  std::span<const int> page_table(int task_id) const { return task(task_id).pages; }
  int cached_tokens(int task_id) const { return task(task_id).n_cached_tokens; }
  // Leading entries of the task's page table that are registered prefixes.
  int registered_pages(int task_id) const { return task(task_id).n_registered_pages; }

  // Where position `pos` of the task lives: row `offset` of `page`. Throws
  // std::invalid_argument for an unknown task, std::out_of_range outside its
  // reserved positions, and, for a write, std::logic_error when the page is a
  // registered prefix (shared pages are never written again).
  struct RowAddress {
    int page;
    int offset;
  };
  RowAddress locate(int task_id, int pos, bool for_write) const;

  // For tests and invariant checks.
  PageState state(int page) const;
  int ref_count(int page) const;
  bool is_registered(int page) const;
  int n_registered() const { return int(by_hash_.size()); }
  std::vector<int> lru_order() const { return lru_.order(); }  // cached pages, least recently used first
  // Throws std::logic_error naming the first broken invariant: counts, free
  // mask and LRU links; reference counts equal to the page tables listing each
  // page; the prefix index consistent (hashes, parents, children); only
  // registered pages cached.
  void check_invariants() const;

 private:
  struct Page {
    int ref_count = 0;
    // The registered prefix this page holds (registered == false: none).
    bool registered = false;
    uint64_t hash = 0;
    int parent = -1;           // the page holding the page before it; -1 for a first page
    int n_children = 0;        // registered pages whose parent this is
    std::vector<int> tokens;   // this page's tokens, to verify a hash match
  };
  struct Task {
    std::vector<int> pages;      // the page table
    int n_cached_tokens = 0;     // leading positions whose K/V are in the cache (prefix hit, then commits)
    int n_registered_pages = 0;  // leading pages registered as prefixes (shared ones included)
    bool registering = true;     // false once one of its pages duplicated an already registered prefix
  };
  struct AdmissionPlan {
    std::vector<int> hit_pages;  // registered pages to share
    int new_pages = 0;           // pages to allocate after them
    int short_by = 0;            // pages missing now (0: the plan fits)
  };

  const Task& task(int task_id) const;
  Task& task(int task_id) { return const_cast<Task&>(std::as_const(*this).task(task_id)); }
  void check_length(int n_tokens, const char* what) const;
  void check_page(int page) const;
  int n_available() const { return n_free_ + lru_.size(); }  // pages an allocation could get
  // Page-table indices of the pages holding positions [from, to) that the task may not write in place.
  std::vector<int> pages_to_copy(const Task& t, int from, int to) const;

  // Prefix index.
  std::vector<int> match(std::span<const int> tokens, int max_pages) const;
  std::optional<int> find(uint64_t hash, int parent, std::span<const int> tokens) const;
  bool register_page(int page, int parent, std::span<const int> page_tokens);
  void unregister(int page);
  AdmissionPlan plan_admission(std::span<const int> prompt, int max_hit_pages) const;

  // Page states.
  int allocate();  // a Free page, else the LRU Cached one evicted; the caller checked n_available()
  void share(int page);
  void drop_reference(int page);
  bool is_free(int page) const { return (free_mask_[size_t(page) / 64] >> (page % 64)) & 1u; }
  void set_free(int page, bool free);
  void record(KVCacheEvent event);

  int max_seq_len_;
  int page_size_;
  PrefixHash hash_;
  std::vector<Page> pages_;
  std::vector<uint64_t> free_mask_;  // bit p % 64 of word p / 64 set: page p is Free
  int n_free_ = 0;
  PageLru lru_;  // the Cached pages
  std::unordered_multimap<uint64_t, int> by_hash_;  // chained hash -> registered page
  std::unordered_map<int, Task> tasks_;
  bool recording_ = false;
  std::function<void(int)> unregister_listener_;
  std::vector<KVCacheEvent> events_;
};

}  // namespace astrai
