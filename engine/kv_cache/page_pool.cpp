// PagePool: allocation with LRU eviction of cached prefixes.
#include "engine/kv_cache/page_pool.h"

#include <stdexcept>
#include <string>

namespace astrai {

PagePool::PagePool(int n_pages, int page_size, PrefixHash hash)
    : allocator_(n_pages), prefix_(n_pages, page_size, std::move(hash)) {}

std::optional<int> PagePool::allocate() {
  if (allocator_.n_free() == 0) {
    const std::optional<int> victim = allocator_.lru_oldest();
    if (!victim) return std::nullopt;
    // The victim's descendants are unreachable without it. No task holds
    // them (a holder would hold the victim too), so they are Cached as well.
    for (const int page : prefix_.erase(*victim)) {
      if (allocator_.state(page) != PageState::Cached)
        throw std::logic_error("PagePool: evicting page " + std::to_string(*victim) + " orphans page " +
                               std::to_string(page) + ", which a task still holds");
      allocator_.evict(page);
    }
  }
  return allocator_.allocate();
}

bool PagePool::register_page(int page, int parent, std::span<const int> page_tokens) {
  if (allocator_.state(page) != PageState::Held)
    throw std::logic_error("PagePool: only a held page can be registered, page " + std::to_string(page) +
                           " is not held");
  return prefix_.insert(page, parent, page_tokens);
}

void PagePool::check_invariants() const {
  allocator_.check_invariants();
  prefix_.check_invariants();
  for (int page = 0; page < n_pages(); ++page) {
    const PageState state = allocator_.state(page);
    if (state == PageState::Cached && !prefix_.contains(page))
      throw std::logic_error("PagePool invariant broken: cached page " + std::to_string(page) +
                             " holds no registered prefix");
    if (state == PageState::Free && prefix_.contains(page))
      throw std::logic_error("PagePool invariant broken: free page " + std::to_string(page) + " is registered");
  }
}

}  // namespace astrai
