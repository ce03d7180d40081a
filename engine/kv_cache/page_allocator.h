// Which physical pages of the paged KV cache are free, how many tasks
// reference each page, and which unreferenced pages still hold a reusable
// prefix, in least-recently-used order.
//
// Every page is in exactly one state:
//   Free   - its bit is set in the free mask; reference count 0; content meaningless.
//   Held   - reference count >= 1: one reference per task whose page table lists it.
//   Cached - reference count 0, content is a registered prefix; on the LRU list.
// The allocator knows nothing of tokens: PagePool decides which released pages
// are worth caching and when a cached page is evicted.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace astrai {

enum class PageState { Free, Held, Cached };

class PageAllocator {
 public:
  // Throws std::invalid_argument when n_pages < 1.
  explicit PageAllocator(int n_pages);

  int n_pages() const { return int(ref_counts_.size()); }
  int n_free() const { return n_free_; }
  int n_cached() const { return n_cached_; }
  int n_held() const { return n_pages() - n_free_ - n_cached_; }

  // Throw std::invalid_argument for a page outside [0, n_pages).
  PageState state(int page) const;
  int ref_count(int page) const;

  // The lowest-numbered free page, now Held with one reference; nullopt when
  // no page is free (cached pages are not taken: evicting them is PagePool's call).
  std::optional<int> allocate();
  // One more reference to a Held page, or a Cached page taken off the LRU list
  // with one reference. Throws std::logic_error for a Free page.
  void share(int page);
  // Drops one reference to a Held page. At zero the page becomes Cached (the
  // most recently used) when keep_cached, else Free. Returns the new state.
  // Throws std::logic_error when the page is not Held.
  PageState release(int page, bool keep_cached);
  // The least recently used Cached page, if any.
  std::optional<int> lru_oldest() const { return lru_head_ < 0 ? std::nullopt : std::optional<int>(lru_head_); }
  // Cached -> Free. Throws std::logic_error when the page is not Cached.
  void evict(int page);

  // Cached pages, least recently used first.
  std::vector<int> lru_order() const;
  // Throws std::logic_error naming the first broken invariant (counts, mask, LRU links).
  void check_invariants() const;

 private:
  void check_page(int page) const;
  bool is_free(int page) const { return (free_mask_[size_t(page) / 64] >> (page % 64)) & 1u; }
  void set_free(int page, bool free);
  void lru_push_back(int page);
  void lru_unlink(int page);

  std::vector<uint64_t> free_mask_;  // bit p % 64 of word p / 64 set: page p is Free
  std::vector<int> ref_counts_;
  std::vector<bool> in_lru_;
  std::vector<int> lru_prev_;  // intrusive doubly linked LRU list over page numbers; -1 ends it
  std::vector<int> lru_next_;
  int lru_head_ = -1;  // least recently used
  int lru_tail_ = -1;  // most recently used
  int n_free_ = 0;
  int n_cached_ = 0;
};

}  // namespace astrai
