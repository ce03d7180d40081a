// Prefix sharing in PageCache (PageManager's prefix index), case by case:
// hits of whole pages only, the last-token cap, hash collisions that must not
// share, LRU eviction only under pressure and from the ends of prefixes,
// out-of-room answers without side effects, and the errors misuse gets.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <vector>

#include <catch2/catch.hpp>

#include "engine/kv_cache/page_cache.h"

namespace {

using astrai::PageCache;
using Tokens = std::vector<int>;

astrai::ModelConfig small_config() {
  astrai::ModelConfig c{.dim = 8, .hidden_dim = 8, .n_layers = 2, .n_heads = 2, .n_kv_heads = 2, .vocab_size = 100,
                        .max_seq_len = 64};  // kv_dim = 8
  return c;
}

uint64_t everything_collides(uint64_t, std::span<const int>) { return 42; }

Tokens iota_tokens(int n, int first) {
  Tokens t(size_t(n), 0);
  std::iota(t.begin(), t.end(), first);
  return t;
}

Tokens concat(Tokens a, const Tokens& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Admits and "computes" a prompt: rows are left as they are, the commit registers full pages.
int admit_and_commit(PageCache& cache, int task, const Tokens& prompt) {
  const std::optional<int> hit = cache.admit(task, prompt);
  REQUIRE(hit.has_value());
  cache.commit(task, prompt);
  return *hit;
}

}  // namespace

TEST_CASE("Prompts sharing whole pages share them; a different first page shares nothing", "[kv_cache][prefix]") {
  for (const auto& hash : {astrai::PrefixHash(astrai::default_prefix_hash), astrai::PrefixHash(everything_collides)}) {
    PageCache cache(small_config(), 16, 4, hash);
    const Tokens a = iota_tokens(10, 1);  // two full pages and a partial one
    CHECK(admit_and_commit(cache, 1, a) == 0);

    const Tokens b = concat(Tokens(a.begin(), a.begin() + 8), {50, 51, 52});
    CHECK(admit_and_commit(cache, 2, b) == 8);
    CHECK(cache.pages().page_table(2)[0] == cache.pages().page_table(1)[0]);
    CHECK(cache.pages().page_table(2)[1] == cache.pages().page_table(1)[1]);
    CHECK(cache.pages().page_table(2)[2] != cache.pages().page_table(1)[2]);

    Tokens c = a;
    c[0] = 99;  // differs in the first page only
    CHECK(admit_and_commit(cache, 3, c) == 0);
    Tokens d = a;
    d[5] = 99;  // differs in the second page
    CHECK(admit_and_commit(cache, 4, d) == 4);

    // The last prompt token is always computed: 8 tokens hit one page, 9 tokens two.
    CHECK(admit_and_commit(cache, 5, Tokens(a.begin(), a.begin() + 8)) == 4);
    CHECK(admit_and_commit(cache, 6, Tokens(a.begin(), a.begin() + 9)) == 8);
    CHECK(admit_and_commit(cache, 7, Tokens(a.begin(), a.begin() + 3)) == 0);
    cache.pages().check_invariants();

    for (int task = 1; task <= 7; ++task) cache.release(task);
    CHECK(cache.all_free());
    // Released prefixes stay cached and still hit.
    CHECK(cache.stats().blocks_cached > 0);
    CHECK(admit_and_commit(cache, 8, b) == 8);
    cache.release(8);
    cache.pages().check_invariants();
  }
}

TEST_CASE("A colliding hash never returns another prompt's pages", "[kv_cache][prefix]") {
  // Every page of every prompt hashes to 42: only the stored tokens and parent
  // links tell the entries apart.
  PageCache prefixes(small_config(), 16, 2, everything_collides);
  admit_and_commit(prefixes, 1, Tokens{1, 2, 3, 4, 0});  // registers [1 2] [3 4]
  admit_and_commit(prefixes, 2, Tokens{5, 6, 3, 4, 0});  // registers [5 6], then [3 4] after another parent
  REQUIRE(prefixes.pages().n_registered() == 4);
  // The pages a probe prompt gets from the registered ones: its hit.
  int probe_task = 10;
  auto shared_pages = [&](const Tokens& prompt) {
    const int hit = admit_and_commit(prefixes, probe_task, prompt);
    const auto table = prefixes.pages().page_table(probe_task);
    std::vector<int> hit_pages(table.begin(), table.begin() + hit / 2);
    prefixes.release(probe_task++);
    return hit_pages;
  };
  const auto first = prefixes.pages().page_table(1), second = prefixes.pages().page_table(2);
  CHECK(shared_pages(Tokens{1, 2, 3, 4, 7}) == std::vector<int>{first[0], first[1]});
  CHECK(shared_pages(Tokens{5, 6, 3, 4, 7}) == std::vector<int>{second[0], second[1]});
  CHECK(shared_pages(Tokens{3, 4, 9}).empty());  // a second page is not a first page
  CHECK(shared_pages(Tokens{1, 2, 5, 6, 9}) == std::vector<int>{first[0]});
  CHECK(shared_pages(Tokens{9, 9, 3, 4, 9}).empty());
  CHECK(shared_pages(Tokens{1, 2, 3, 4}) == std::vector<int>{first[0]});  // the last token is computed
  prefixes.pages().check_invariants();

  // In a PageCache: a same-length prompt with other tokens gets its own pages.
  PageCache cache(small_config(), 8, 4, everything_collides);
  const Tokens a = iota_tokens(9, 1), b = iota_tokens(9, 20);
  CHECK(admit_and_commit(cache, 1, a) == 0);
  CHECK(admit_and_commit(cache, 2, b) == 0);
  for (const int page : cache.pages().page_table(2)) {
    const auto a_pages = cache.pages().page_table(1);
    CHECK(std::find(a_pages.begin(), a_pages.end(), page) == a_pages.end());
  }
  cache.pages().check_invariants();
}

TEST_CASE("Pages a task shares are never written again", "[kv_cache][prefix]") {
  PageCache cache(small_config(), 8, 4);
  const Tokens a = iota_tokens(9, 1);
  admit_and_commit(cache, 1, a);
  REQUIRE(admit_and_commit(cache, 2, a) == 8);
  const std::vector<float> row(8, 1.0f);
  // Task 2 must start computing at position 8; writing below the hit would
  // change task 1's keys. Task 1's own registered pages are frozen as well.
  CHECK_THROWS_AS(cache.view().write(0, 2, 7, row.data(), row.data()), std::logic_error);
  CHECK_THROWS_AS(cache.view().write(0, 1, 0, row.data(), row.data()), std::logic_error);
  CHECK_NOTHROW(cache.view().write(0, 2, 8, row.data(), row.data()));
  CHECK_THROWS_AS(cache.view().write(0, 2, 12, row.data(), row.data()), std::out_of_range);
  CHECK_THROWS_AS(cache.view().key(2, 2, 0), std::out_of_range);
  CHECK_THROWS_AS(cache.view().key(0, 3, 0), std::invalid_argument);
}

TEST_CASE("Cached prefixes are evicted least recently used first, only when no page is free", "[kv_cache][prefix]") {
  PageCache cache(small_config(), 8, 2);
  const Tokens a = {1, 1, 2, 2, 3}, b = {4, 4, 5, 5, 6};  // 2 full pages + 1 each
  admit_and_commit(cache, 1, a);
  cache.release(1);  // a's 2 full pages cached (the second one older), its third page freed
  admit_and_commit(cache, 2, b);
  cache.release(2);
  CHECK(cache.stats().blocks_cached == 4);
  CHECK(cache.stats().blocks_free == 4);

  // Four free pages: a 7-token prompt takes them without evicting anything.
  admit_and_commit(cache, 3, Tokens(7, 7));
  CHECK(cache.stats().blocks_cached == 4);
  // No free page left: one more page evicts a's second page, the least recently used.
  admit_and_commit(cache, 4, Tokens{8});
  CHECK(cache.stats().blocks_cached == 3);
  // b reuses both its pages; its third page evicts a's first one.
  CHECK(admit_and_commit(cache, 5, b) == 4);
  CHECK(cache.stats().blocks_cached == 0);
  CHECK_FALSE(cache.admit(6, a).has_value());  // every page held now
  cache.release(5);
  CHECK(admit_and_commit(cache, 6, a) == 0);   // a was evicted
  cache.pages().check_invariants();
}

TEST_CASE("Eviction trims cached prefixes from their ends", "[kv_cache][prefix]") {
  // A task releases its pages last first, so the deepest page of a cached
  // prefix is the least recently used: pressure takes [1 2 3 9] before
  // [1 2 3] before [1 2] before [1], and what is left of the prefix still hits.
  PageCache cache(small_config(), 5, 1);
  admit_and_commit(cache, 1, Tokens{1, 2, 3, 9});  // registers [1] [1 2] [1 2 3] [1 2 3 9]
  cache.release(1);
  REQUIRE(cache.stats().blocks_cached == 4);
  int task = 2;
  const auto hit_after_evicting = [&](int n_evicted) {
    // Takes every free page, then evicts; never committed, its pages come back free.
    const int n = cache.stats().blocks_free + n_evicted;
    REQUIRE(cache.admit(task, Tokens(size_t(n), 50)).has_value());
    cache.release(task++);
    cache.pages().check_invariants();
    const int hit = cache.admit(task, Tokens{1, 2, 3, 4}).value();  // at most 3 pages: the last token is computed
    cache.release(task++);
    return hit;
  };
  CHECK(hit_after_evicting(1) == 3);  // [1 2 3 9] went first
  CHECK(hit_after_evicting(2) == 1);  // then [1 2 3] and [1 2]
  CHECK(hit_after_evicting(1) == 0);
  CHECK(cache.stats().blocks_cached == 0);
  cache.pages().check_invariants();
}

TEST_CASE("Out of room is an answer without side effects, never an exception", "[kv_cache][prefix]") {
  PageCache cache(small_config(), 4, 4);
  admit_and_commit(cache, 1, iota_tokens(9, 1));  // 3 pages
  const astrai::KVCacheStats before = cache.stats();
  CHECK(cache.pages().pages_short_for(iota_tokens(9, 30)) == 2);
  CHECK_FALSE(cache.admit(2, iota_tokens(9, 30)).has_value());
  CHECK_FALSE(cache.has_task(2));
  CHECK_FALSE(cache.reserve(1, 17));  // would need 2 more pages
  CHECK(cache.pages().page_table(1).size() == 3);
  const astrai::KVCacheStats after = cache.stats();
  CHECK(after.blocks_free == before.blocks_free);
  CHECK(after.blocks_held == before.blocks_held);
  CHECK(after.tasks == before.tasks);
  CHECK(cache.reserve(1, 16));  // fits in the last free page
  CHECK(cache.stats().blocks_free == 0);
  // A prompt whose hit covers all but what fits is admitted.
  CHECK(cache.pages().pages_short_for(iota_tokens(9, 1)) == 1);
  cache.release(1);
  CHECK(cache.all_free());
  CHECK(cache.free_tokens() == cache.capacity_tokens());
}

TEST_CASE("Two tasks computing the same prefix at once register it once", "[kv_cache][prefix]") {
  PageCache cache(small_config(), 16, 4);
  const Tokens a = iota_tokens(10, 1);  // two full pages
  REQUIRE(cache.admit(1, a) == 0);
  REQUIRE(cache.admit(2, a) == 0);  // nothing committed yet: no hit
  cache.commit(1, a);
  cache.commit(2, a);  // duplicates: task 2's pages stay private
  CHECK(cache.pages().n_registered() == 2);
  cache.pages().check_invariants();
  cache.release(2);
  cache.release(1);
  CHECK(cache.stats().blocks_cached == 2);
  CHECK(cache.admit(3, a) == 8);
  cache.release(3);
  CHECK(cache.all_free());
}

TEST_CASE("Misuse of PageCache throws std::invalid_argument naming the problem", "[kv_cache][prefix]") {
  PageCache cache(small_config(), 8, 4);
  CHECK_THROWS_AS(cache.admit(1, Tokens{}), std::invalid_argument);
  CHECK_THROWS_AS(cache.admit(1, Tokens(65, 1)), std::invalid_argument);
  REQUIRE(cache.admit(1, Tokens{1, 2, 3}) == 0);
  CHECK_THROWS_AS(cache.admit(1, Tokens{1}), std::invalid_argument);
  CHECK_THROWS_AS(cache.reserve(2, 4), std::invalid_argument);
  CHECK_THROWS_AS(cache.reserve(1, 65), std::invalid_argument);
  CHECK_THROWS_AS(cache.commit(1, Tokens(5, 1)), std::invalid_argument);  // 4 reserved
  cache.commit(1, Tokens{1, 2, 3});
  CHECK_THROWS_AS(cache.commit(1, Tokens{1, 2}), std::invalid_argument);  // cannot shrink
  CHECK_THROWS_AS(cache.release(2), std::invalid_argument);
  CHECK_THROWS_WITH(cache.release(2), Catch::Contains("task 2"));
  CHECK_THROWS_AS(PageCache(small_config(), 0, 4), std::invalid_argument);
  CHECK_THROWS_AS(PageCache(small_config(), 4, 0), std::invalid_argument);
  CHECK_THROWS_AS(PageCache(astrai::ModelConfig{}, 4, 4), std::invalid_argument);
}
