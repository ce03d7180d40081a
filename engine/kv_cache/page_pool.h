// The pages of a PageCache as one pool: the allocator (free / held / cached
// pages) and the prefix cache (which pages hold which token prefixes) kept in
// step. A released page whose content is a registered prefix stays Cached, on
// the LRU list, so a later prompt can reuse it; it is evicted (its prefix
// entry, and those of the pages after it, removed) only when no free page is
// left for an allocation.
//
// Invariant: a page is registered iff it is Held or Cached, and never Free;
// every task holding a registered page also holds all its ancestors, so the
// descendants of a Cached page are Cached too and can be evicted with it.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "engine/kv_cache/page_allocator.h"
#include "engine/kv_cache/prefix_cache.h"

namespace astrai {

class PagePool {
 public:
  PagePool(int n_pages, int page_size, PrefixHash hash = default_prefix_hash);

  int n_pages() const { return allocator_.n_pages(); }
  int page_size() const { return prefix_.page_size(); }
  // Pages an allocation could get now: free ones and cached ones it may evict.
  int n_available() const { return allocator_.n_free() + allocator_.n_cached(); }

  // A page for new content, Held with one reference: a free page, else the
  // least recently used cached page after evicting it. nullopt when every
  // page is held.
  std::optional<int> allocate();
  // Pages of the longest registered prefix of `tokens` (at most max_pages);
  // takes no references: share() each page to keep it.
  std::vector<int> match(std::span<const int> tokens, int max_pages) const {
    return prefix_.match(tokens, max_pages);
  }
  void share(int page) { allocator_.share(page); }
  // Drops one reference; a page nobody holds any more becomes Cached when it
  // is a registered prefix, else Free.
  void release(int page) { allocator_.release(page, prefix_.contains(page)); }
  // Registers Held `page` as holding `page_tokens` after `parent` (-1: first
  // page); false when this prefix is already registered on another page.
  bool register_page(int page, int parent, std::span<const int> page_tokens);
  bool is_registered(int page) const { return prefix_.contains(page); }

  const PageAllocator& allocator() const { return allocator_; }
  const PrefixCache& prefix_cache() const { return prefix_; }
  // Both parts' invariants and the one linking them; throws std::logic_error.
  void check_invariants() const;

 private:
  PageAllocator allocator_;
  PrefixCache prefix_;
};

}  // namespace astrai
