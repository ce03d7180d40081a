// PageManager against a page-level model (RapidCheck stateful test): random
// admit / reserve / commit / release sequences, with the real hash and with
// one that maps every page to the same value. The model is the obvious
// version of the rules (a set of free pages, a vector for the LRU list, a map
// of registered pages with their parent and tokens, linear searches); after
// every command each page's state and reference count, the LRU order, every
// page table and the counts must equal the model's. So no page is ever owned
// twice, the lowest free page is handed out, the least recently used cached
// page is evicted, counts are exact and nothing leaks.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>
#include <rapidcheck/state.h>

#include "engine/kv_cache/page_manager.h"

namespace {

using astrai::PageManager;
using astrai::PageState;
using Tokens = std::vector<int>;

constexpr int kMaxSeqLen = 24;
constexpr int kAlphabet = 2;  // few token ids: prompts often share pages

struct PageModel {
  struct Task {
    std::vector<int> pages;
    Tokens tokens;  // committed so far
    int n_registered = 0;
    bool registering = true;
  };
  int page_size;
  std::vector<int> refs;
  std::set<int> free;
  std::vector<int> lru;                             // cached pages, least recently used first
  std::map<int, std::pair<int, Tokens>> registered;  // page -> (parent page, its tokens)
  std::map<int, Task> tasks;
  std::vector<Tokens> corpus;                        // prompts seen, to draw shared prefixes from
  int next_task = 1;

  PageModel(int n_pages, int page_size) : page_size(page_size), refs(size_t(n_pages), 0) {
    for (int p = 0; p < n_pages; ++p) free.insert(p);
  }
  int pages_for(int n_tokens) const { return (n_tokens + page_size - 1) / page_size; }
  Tokens page_tokens(const Tokens& tokens, int i) const {
    return Tokens(tokens.begin() + i * page_size, tokens.begin() + (i + 1) * page_size);
  }
  std::optional<int> registered_page(int parent, const Tokens& tokens) const {
    for (const auto& [page, entry] : registered)
      if (entry == std::make_pair(parent, tokens)) return page;
    return std::nullopt;
  }
  bool is_cached(int page) const { return std::find(lru.begin(), lru.end(), page) != lru.end(); }
  PageState state(int page) const {
    if (free.count(page)) return PageState::Free;
    return is_cached(page) ? PageState::Cached : PageState::Held;
  }
  // The lowest free page, else the least recently used cached one, unregistered.
  int take_page() {
    if (free.empty()) {
      const int victim = lru.front();
      lru.erase(lru.begin());
      registered.erase(victim);
      free.insert(victim);
    }
    const int page = *free.begin();
    free.erase(free.begin());
    refs[size_t(page)] = 1;
    return page;
  }

  std::optional<int> admit(int id, const Tokens& prompt) {
    std::vector<int> hits;
    const int max_hit = (int(prompt.size()) - 1) / page_size;  // the last token is always computed
    for (int i = 0, parent = -1; i < max_hit; ++i) {
      const auto page = registered_page(parent, page_tokens(prompt, i));
      if (!page) break;
      hits.push_back(*page);
      parent = *page;
    }
    const int new_pages = pages_for(int(prompt.size())) - int(hits.size());
    const int revived = int(std::count_if(hits.begin(), hits.end(), [&](int p) { return is_cached(p); }));
    if (new_pages > int(free.size() + lru.size()) - revived) return std::nullopt;
    for (const int page : hits) {
      std::erase(lru, page);
      ++refs[size_t(page)];
    }
    Task t{hits, Tokens(prompt.begin(), prompt.begin() + long(hits.size()) * page_size), int(hits.size()), true};
    for (int i = 0; i < new_pages; ++i) t.pages.push_back(take_page());
    tasks[id] = t;
    return int(t.tokens.size());
  }
  bool reserve(int id, int n_tokens) {
    Task& t = tasks.at(id);
    const int missing = pages_for(n_tokens) - int(t.pages.size());
    if (missing > int(free.size() + lru.size())) return false;
    for (int i = 0; i < missing; ++i) t.pages.push_back(take_page());
    return true;
  }
  void commit(int id, const Tokens& tokens) {
    Task& t = tasks.at(id);
    t.tokens = tokens;
    while (t.registering && t.n_registered < int(tokens.size()) / page_size) {
      const int parent = t.n_registered == 0 ? -1 : t.pages[size_t(t.n_registered - 1)];
      const Tokens chunk = page_tokens(tokens, t.n_registered);
      if (registered_page(parent, chunk)) {
        t.registering = false;
        break;
      }
      registered[t.pages[size_t(t.n_registered)]] = {parent, chunk};
      ++t.n_registered;
    }
  }
  void release(int id) {
    const Task& t = tasks.at(id);
    for (auto page = t.pages.rbegin(); page != t.pages.rend(); ++page) {
      if (--refs[size_t(*page)] > 0) continue;
      if (registered.count(*page))
        lru.push_back(*page);
      else
        free.insert(*page);
    }
    tasks.erase(id);
  }
};

using Command = rc::state::Command<PageModel, PageManager>;

void expect_matches(const PageModel& m, const PageManager& pages) {
  pages.check_invariants();
  for (int p = 0; p < pages.n_pages(); ++p) {
    RC_ASSERT(pages.state(p) == m.state(p));
    RC_ASSERT(pages.ref_count(p) == m.refs[size_t(p)]);
    RC_ASSERT(pages.is_registered(p) == (m.registered.count(p) == 1));
  }
  RC_ASSERT(pages.lru_order() == m.lru);
  const astrai::KVCacheStats s = pages.stats();
  RC_ASSERT(s.blocks_free == int(m.free.size()));
  RC_ASSERT(s.blocks_cached == int(m.lru.size()));
  RC_ASSERT(s.blocks_free + s.blocks_cached + s.blocks_held == pages.n_pages());
  RC_ASSERT(s.tasks == int(m.tasks.size()));
  for (const auto& [id, t] : m.tasks) {
    const auto table = pages.page_table(id);
    RC_ASSERT(std::vector<int>(table.begin(), table.end()) == t.pages);
    RC_ASSERT(pages.cached_tokens(id) == int(t.tokens.size()));
  }
}

struct Admit : Command {
  int id;
  Tokens prompt;
  explicit Admit(const PageModel& m) : id(m.next_task) {
    RC_PRE(m.tasks.size() < 5);
    if (!m.corpus.empty() && *rc::gen::arbitrary<bool>()) {
      const Tokens& stem = *rc::gen::elementOf(m.corpus);
      prompt.assign(stem.begin(), stem.begin() + *rc::gen::inRange<size_t>(0, stem.size() + 1));
    }
    const auto tail = *rc::gen::container<Tokens>(*rc::gen::inRange(0, 6), rc::gen::inRange(0, kAlphabet));
    prompt.insert(prompt.end(), tail.begin(), tail.end());
    RC_PRE(!prompt.empty() && prompt.size() <= size_t(kMaxSeqLen));
  }
  void apply(PageModel& m) const override {
    ++m.next_task;
    m.corpus.push_back(prompt);
    if (m.admit(id, prompt)) m.commit(id, prompt);
  }
  void run(const PageModel& m, PageManager& pages) const override {
    const auto expected = PageModel(m).admit(id, prompt);
    RC_ASSERT(pages.admit(id, prompt) == expected);
    if (expected) pages.commit(id, prompt);
    expect_matches(nextState(m), pages);
  }
  void show(std::ostream& os) const override {
    os << "admit " << id << ':';
    for (const int t : prompt) os << ' ' << t;
  }
};

// One decode step: room for one more token, then its commit.
struct Grow : Command {
  int id;
  int token;
  explicit Grow(const PageModel& m) {
    RC_PRE(!m.tasks.empty());
    id = (*rc::gen::elementOf(m.tasks)).first;
    RC_PRE(m.tasks.at(id).tokens.size() < size_t(kMaxSeqLen));
    token = *rc::gen::inRange(0, kAlphabet);
  }
  Tokens grown(const PageModel& m) const {
    Tokens tokens = m.tasks.at(id).tokens;
    tokens.push_back(token);
    return tokens;
  }
  void apply(PageModel& m) const override {
    const Tokens tokens = grown(m);
    if (m.reserve(id, int(tokens.size()))) m.commit(id, tokens);
  }
  void run(const PageModel& m, PageManager& pages) const override {
    const Tokens tokens = grown(m);
    const bool expected = PageModel(m).reserve(id, int(tokens.size()));
    RC_ASSERT(pages.reserve(id, int(tokens.size())) == expected);
    if (expected) pages.commit(id, tokens);
    expect_matches(nextState(m), pages);
  }
  void show(std::ostream& os) const override { os << "grow " << id << " by " << token; }
};

struct Release : Command {
  int id;
  explicit Release(const PageModel& m) {
    RC_PRE(!m.tasks.empty());
    id = (*rc::gen::elementOf(m.tasks)).first;
  }
  void apply(PageModel& m) const override { m.release(id); }
  void run(const PageModel& m, PageManager& pages) const override {
    pages.release(id);
    expect_matches(nextState(m), pages);
  }
  void show(std::ostream& os) const override { os << "release " << id; }
};

// Misuse must throw std::invalid_argument and change nothing.
struct Misuse : Command {
  void run(const PageModel& m, PageManager& pages) const override {
    const int unknown = m.next_task + 1000;
    RC_ASSERT_THROWS_AS(pages.release(unknown), std::invalid_argument);
    RC_ASSERT_THROWS_AS(pages.reserve(unknown, 1), std::invalid_argument);
    RC_ASSERT_THROWS_AS(pages.commit(unknown, Tokens{0}), std::invalid_argument);
    RC_ASSERT_THROWS_AS(pages.page_table(unknown), std::invalid_argument);
    RC_ASSERT_THROWS_AS(pages.admit(unknown, Tokens{}), std::invalid_argument);
    RC_ASSERT_THROWS_AS(pages.admit(unknown, Tokens(kMaxSeqLen + 1, 0)), std::invalid_argument);
    RC_ASSERT_THROWS_AS(pages.state(pages.n_pages()), std::invalid_argument);
    RC_ASSERT_THROWS_AS(pages.state(-1), std::invalid_argument);
    if (!m.tasks.empty()) {
      const auto& [id, t] = *m.tasks.begin();
      RC_ASSERT_THROWS_AS(pages.admit(id, Tokens{0}), std::invalid_argument);     // already admitted
      RC_ASSERT_THROWS_AS(pages.reserve(id, kMaxSeqLen + 1), std::invalid_argument);  // past the context
      if (t.tokens.size() > 1)  // a commit cannot shrink
        RC_ASSERT_THROWS_AS(pages.commit(id, Tokens(t.tokens.begin(), t.tokens.end() - 1)), std::invalid_argument);
    }
    expect_matches(m, pages);
  }
  void show(std::ostream& os) const override { os << "misuse"; }
};

// Releasing every task leaves nothing held: cached prefixes are not leaks.
struct ReleaseAll : Command {
  void apply(PageModel& m) const override {
    while (!m.tasks.empty()) m.release(m.tasks.begin()->first);
  }
  void run(const PageModel& m, PageManager& pages) const override {
    for (const auto& [id, t] : m.tasks) pages.release(id);
    RC_ASSERT(pages.stats().blocks_held == 0);
    expect_matches(nextState(m), pages);
  }
  void show(std::ostream& os) const override { os << "release all"; }
};

void check_against_model(bool colliding_hash) {
  // Up to 130 pages: free masks of one, two and three 64-bit words.
  const int n_pages = *rc::gen::inRange(1, 131);
  const int page_size = *rc::gen::inRange(1, 5);
  astrai::PrefixHash hash = astrai::default_prefix_hash;
  if (colliding_hash) hash = [](uint64_t, std::span<const int>) { return uint64_t(7); };
  PageManager pages(kMaxSeqLen, n_pages, page_size, hash);
  rc::state::check(PageModel(n_pages, page_size), pages,
                   rc::state::gen::execOneOfWithArgs<Admit, Admit, Grow, Grow, Grow, Release, Misuse, ReleaseAll>());
}

}  // namespace

TEST_CASE("PageManager follows the page-level model under random command sequences", "[kv_cache][pages]") {
  rc::prop("with the default prefix hash", [] { check_against_model(false); });
  rc::prop("with a hash that maps every page to the same value", [] { check_against_model(true); });
}

TEST_CASE("PageManager hands out the lowest free page and reports exhaustion", "[kv_cache][pages]") {
  PageManager pages(64, 3, 1);
  for (int task = 0; task < 3; ++task) REQUIRE(pages.admit(task, Tokens{task}) == 0);
  CHECK(pages.page_table(1)[0] == 1);
  CHECK_FALSE(pages.admit(3, Tokens{3}).has_value());  // nothing free, nothing cached
  pages.release(1);                                    // never committed: its page is free again
  CHECK(pages.state(1) == PageState::Free);
  CHECK(pages.admit(4, Tokens{4}) == 0);
  CHECK(pages.page_table(4)[0] == 1);
  CHECK_THROWS_AS(PageManager(64, 0, 4), std::invalid_argument);
  CHECK_THROWS_AS(PageManager(64, 4, 0), std::invalid_argument);
  CHECK_THROWS_AS(PageManager(0, 4, 4), std::invalid_argument);
  CHECK_THROWS_AS(PageManager(64, 4, 4, astrai::PrefixHash()), std::invalid_argument);
  CHECK_THROWS_AS(pages.state(3), std::invalid_argument);
}
