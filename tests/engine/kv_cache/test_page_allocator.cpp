// PageAllocator against a simple model (RapidCheck stateful test): random
// allocate / share / release / evict sequences; after every command each
// page's state and reference count, the LRU order and the counts must equal
// the model's, so no page is ever owned twice, counts are exact and nothing leaks.
#include <algorithm>
#include <set>
#include <stdexcept>
#include <vector>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>
#include <rapidcheck/state.h>

#include "engine/kv_cache/page_allocator.h"

namespace {

using astrai::PageAllocator;
using astrai::PageState;

// The model: reference counts, the free set and the cached pages oldest first.
struct AllocatorModel {
  std::vector<int> refs;
  std::set<int> free;
  std::vector<int> lru;

  explicit AllocatorModel(int n_pages) : refs(size_t(n_pages), 0) {
    for (int p = 0; p < n_pages; ++p) free.insert(p);
  }
  bool is_cached(int page) const { return std::find(lru.begin(), lru.end(), page) != lru.end(); }
  PageState state(int page) const {
    if (free.count(page)) return PageState::Free;
    return is_cached(page) ? PageState::Cached : PageState::Held;
  }
  std::vector<int> pages_in(PageState wanted) const {
    std::vector<int> pages;
    for (int p = 0; p < int(refs.size()); ++p)
      if (state(p) == wanted) pages.push_back(p);
    return pages;
  }
};

using Command = rc::state::Command<AllocatorModel, PageAllocator>;

// The allocator must agree with the model on every page after every command.
void expect_matches(const AllocatorModel& m, const PageAllocator& a) {
  a.check_invariants();
  for (int p = 0; p < a.n_pages(); ++p) {
    RC_ASSERT(a.state(p) == m.state(p));
    RC_ASSERT(a.ref_count(p) == m.refs[size_t(p)]);
  }
  RC_ASSERT(a.lru_order() == m.lru);
  RC_ASSERT(a.n_free() == int(m.free.size()));
  RC_ASSERT(a.n_cached() == int(m.lru.size()));
  RC_ASSERT(a.n_free() + a.n_cached() + a.n_held() == a.n_pages());
}

struct Allocate : Command {
  void apply(AllocatorModel& m) const override {
    if (m.free.empty()) return;
    const int page = *m.free.begin();  // the lowest free page
    m.free.erase(page);
    m.refs[size_t(page)] = 1;
  }
  void run(const AllocatorModel& m, PageAllocator& a) const override {
    const auto page = a.allocate();
    if (m.free.empty())
      RC_ASSERT(!page.has_value());
    else
      RC_ASSERT(page == std::optional<int>(*m.free.begin()));
    expect_matches(nextState(m), a);
  }
  void show(std::ostream& os) const override { os << "allocate"; }
};

struct Share : Command {
  int page;
  explicit Share(const AllocatorModel& m) {
    std::vector<int> candidates = m.pages_in(PageState::Held);
    const std::vector<int> cached = m.pages_in(PageState::Cached);
    candidates.insert(candidates.end(), cached.begin(), cached.end());
    RC_PRE(!candidates.empty());
    page = *rc::gen::elementOf(candidates);
  }
  void apply(AllocatorModel& m) const override {
    if (m.is_cached(page)) std::erase(m.lru, page);
    ++m.refs[size_t(page)];
  }
  void run(const AllocatorModel& m, PageAllocator& a) const override {
    a.share(page);
    expect_matches(nextState(m), a);
  }
  void show(std::ostream& os) const override { os << "share " << page; }
};

struct Release : Command {
  int page;
  bool keep_cached;
  explicit Release(const AllocatorModel& m) {
    const std::vector<int> held = m.pages_in(PageState::Held);
    RC_PRE(!held.empty());
    page = *rc::gen::elementOf(held);
    keep_cached = *rc::gen::arbitrary<bool>();
  }
  void apply(AllocatorModel& m) const override {
    if (--m.refs[size_t(page)] > 0) return;
    if (keep_cached)
      m.lru.push_back(page);
    else
      m.free.insert(page);
  }
  void run(const AllocatorModel& m, PageAllocator& a) const override {
    const AllocatorModel next = nextState(m);
    RC_ASSERT(a.release(page, keep_cached) == next.state(page));
    expect_matches(next, a);
  }
  void show(std::ostream& os) const override { os << "release " << page << (keep_cached ? " (keep cached)" : ""); }
};

struct EvictOldest : Command {
  explicit EvictOldest(const AllocatorModel& m) { RC_PRE(!m.lru.empty()); }
  void apply(AllocatorModel& m) const override {
    m.free.insert(m.lru.front());
    m.lru.erase(m.lru.begin());
  }
  void run(const AllocatorModel& m, PageAllocator& a) const override {
    RC_ASSERT(a.lru_oldest() == std::optional<int>(m.lru.front()));
    a.evict(m.lru.front());
    expect_matches(nextState(m), a);
  }
  void show(std::ostream& os) const override { os << "evict oldest"; }
};

struct EvictAny : Command {
  int page;
  explicit EvictAny(const AllocatorModel& m) {
    RC_PRE(!m.lru.empty());
    page = *rc::gen::elementOf(m.lru);
  }
  void apply(AllocatorModel& m) const override {
    std::erase(m.lru, page);
    m.free.insert(page);
  }
  void run(const AllocatorModel& m, PageAllocator& a) const override {
    a.evict(page);
    expect_matches(nextState(m), a);
  }
  void show(std::ostream& os) const override { os << "evict " << page; }
};

// Illegal operations must throw and change nothing.
struct Misuse : Command {
  int page;
  explicit Misuse(const AllocatorModel& m) { page = *rc::gen::inRange(-1, int(m.refs.size()) + 1); }
  void run(const AllocatorModel& m, PageAllocator& a) const override {
    const bool valid = page >= 0 && page < int(m.refs.size());
    const PageState s = valid ? m.state(page) : PageState::Free;
    if (!valid || s == PageState::Free) RC_ASSERT_THROWS(a.share(page));
    if (!valid || s != PageState::Held) RC_ASSERT_THROWS(a.release(page, true));
    if (!valid || s != PageState::Cached) RC_ASSERT_THROWS(a.evict(page));
    expect_matches(m, a);
  }
  void show(std::ostream& os) const override { os << "misuse " << page; }
};

// Returning every reference and evicting every cached page frees all pages.
struct DrainAll : Command {
  void apply(AllocatorModel& m) const override { m = AllocatorModel(int(m.refs.size())); }
  void run(const AllocatorModel& m, PageAllocator& a) const override {
    for (int p = 0; p < int(m.refs.size()); ++p)
      for (int r = 0; r < m.refs[size_t(p)]; ++r) a.release(p, false);
    for (const int p : m.lru) a.evict(p);
    RC_ASSERT(a.n_free() == a.n_pages());
    expect_matches(nextState(m), a);
  }
  void show(std::ostream& os) const override { os << "drain all"; }
};

}  // namespace

TEST_CASE("PageAllocator follows the model under random command sequences", "[kv_cache][allocator]") {
  rc::prop("allocate/share/release/evict sequences", [] {
    // Up to 130 pages: free masks of one, two and three 64-bit words.
    const int n_pages = *rc::gen::inRange(1, 131);
    PageAllocator allocator(n_pages);
    rc::state::check(AllocatorModel(n_pages), allocator,
                     rc::state::gen::execOneOfWithArgs<Allocate, Allocate, Share, Release, Release, EvictOldest,
                                                       EvictAny, Misuse, DrainAll>());
  });
}

TEST_CASE("PageAllocator hands out the lowest free page and reports exhaustion", "[kv_cache][allocator]") {
  PageAllocator a(3);
  CHECK(a.allocate() == 0);
  CHECK(a.allocate() == 1);
  CHECK(a.allocate() == 2);
  CHECK_FALSE(a.allocate().has_value());
  CHECK(a.release(1, false) == PageState::Free);
  CHECK(a.allocate() == 1);
  CHECK_THROWS_AS(PageAllocator(0), std::invalid_argument);
  CHECK_THROWS_AS(a.state(3), std::invalid_argument);
}
