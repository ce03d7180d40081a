// PageAllocator: free-page bitmask, reference counts and the intrusive LRU list.
#include "engine/kv_cache/page_allocator.h"

#include <bit>
#include <stdexcept>
#include <string>

namespace astrai {

namespace {

std::string page_name(int page) { return "page " + std::to_string(page); }

}  // namespace

PageAllocator::PageAllocator(int n_pages) {
  if (n_pages < 1)
    throw std::invalid_argument("PageAllocator: n_pages must be at least 1, got " + std::to_string(n_pages));
  free_mask_.assign((size_t(n_pages) + 63) / 64, 0);
  for (int p = 0; p < n_pages; ++p) set_free(p, true);
  ref_counts_.assign(size_t(n_pages), 0);
  in_lru_.assign(size_t(n_pages), false);
  lru_prev_.assign(size_t(n_pages), -1);
  lru_next_.assign(size_t(n_pages), -1);
  n_free_ = n_pages;
}

void PageAllocator::check_page(int page) const {
  if (page < 0 || page >= n_pages())
    throw std::invalid_argument("PageAllocator: " + page_name(page) + " is outside [0, " +
                                std::to_string(n_pages()) + ")");
}

void PageAllocator::set_free(int page, bool free) {
  const uint64_t bit = uint64_t(1) << (page % 64);
  if (free)
    free_mask_[size_t(page) / 64] |= bit;
  else
    free_mask_[size_t(page) / 64] &= ~bit;
}

PageState PageAllocator::state(int page) const {
  check_page(page);
  if (is_free(page)) return PageState::Free;
  return in_lru_[size_t(page)] ? PageState::Cached : PageState::Held;
}

int PageAllocator::ref_count(int page) const {
  check_page(page);
  return ref_counts_[size_t(page)];
}

std::optional<int> PageAllocator::allocate() {
  for (size_t word = 0; word < free_mask_.size(); ++word) {
    if (free_mask_[word] == 0) continue;
    const int page = int(word * 64) + std::countr_zero(free_mask_[word]);
    set_free(page, false);
    ref_counts_[size_t(page)] = 1;
    --n_free_;
    return page;
  }
  return std::nullopt;
}

void PageAllocator::share(int page) {
  switch (state(page)) {
    case PageState::Free:
      throw std::logic_error("PageAllocator: cannot share " + page_name(page) + ": it is free");
    case PageState::Cached:
      lru_unlink(page);
      --n_cached_;
      ref_counts_[size_t(page)] = 1;
      return;
    case PageState::Held:
      ++ref_counts_[size_t(page)];
      return;
  }
}

PageState PageAllocator::release(int page, bool keep_cached) {
  if (state(page) != PageState::Held)
    throw std::logic_error("PageAllocator: cannot release " + page_name(page) + ": no task holds it");
  if (--ref_counts_[size_t(page)] > 0) return PageState::Held;
  if (keep_cached) {
    lru_push_back(page);
    ++n_cached_;
    return PageState::Cached;
  }
  set_free(page, true);
  ++n_free_;
  return PageState::Free;
}

void PageAllocator::evict(int page) {
  if (state(page) != PageState::Cached)
    throw std::logic_error("PageAllocator: cannot evict " + page_name(page) + ": it is not a cached page");
  lru_unlink(page);
  --n_cached_;
  set_free(page, true);
  ++n_free_;
}

void PageAllocator::lru_push_back(int page) {
  lru_prev_[size_t(page)] = lru_tail_;
  lru_next_[size_t(page)] = -1;
  if (lru_tail_ >= 0)
    lru_next_[size_t(lru_tail_)] = page;
  else
    lru_head_ = page;
  lru_tail_ = page;
  in_lru_[size_t(page)] = true;
}

void PageAllocator::lru_unlink(int page) {
  const int prev = lru_prev_[size_t(page)];
  const int next = lru_next_[size_t(page)];
  (prev >= 0 ? lru_next_[size_t(prev)] : lru_head_) = next;
  (next >= 0 ? lru_prev_[size_t(next)] : lru_tail_) = prev;
  lru_prev_[size_t(page)] = lru_next_[size_t(page)] = -1;
  in_lru_[size_t(page)] = false;
}

std::vector<int> PageAllocator::lru_order() const {
  std::vector<int> order;
  for (int p = lru_head_; p >= 0 && order.size() <= size_t(n_pages()); p = lru_next_[size_t(p)]) order.push_back(p);
  return order;
}

void PageAllocator::check_invariants() const {
  auto fail = [](const std::string& what) { throw std::logic_error("PageAllocator invariant broken: " + what); };
  int free = 0, cached = 0;
  for (int p = 0; p < n_pages(); ++p) {
    const bool lru = in_lru_[size_t(p)];
    const int refs = ref_counts_[size_t(p)];
    if (is_free(p) && (lru || refs != 0)) fail(page_name(p) + " is free but cached or referenced");
    if (lru && refs != 0) fail(page_name(p) + " is cached but referenced");
    if (!is_free(p) && !lru && refs < 1) fail(page_name(p) + " is held with no reference");
    free += is_free(p);
    cached += lru;
  }
  if (free != n_free_) fail("free count " + std::to_string(n_free_) + " != " + std::to_string(free) + " free bits");
  if (cached != n_cached_) fail("cached count " + std::to_string(n_cached_) + " is wrong");
  const std::vector<int> order = lru_order();
  if (int(order.size()) != cached) fail("LRU list length differs from the cached pages");
  for (size_t i = 0; i < order.size(); ++i) {
    if (!in_lru_[size_t(order[i])]) fail("LRU list holds uncached " + page_name(order[i]));
    if (lru_prev_[size_t(order[i])] != (i == 0 ? -1 : order[i - 1])) fail("LRU back link of " + page_name(order[i]));
  }
  if (lru_tail_ != (order.empty() ? -1 : order.back())) fail("LRU tail is wrong");
}

}  // namespace astrai
