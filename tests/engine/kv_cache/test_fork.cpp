// Forked tasks (the n choices of one prompt): the prompt's pages are held
// once, a shared page is copied before it is first written (copy-on-write),
// and no choice ever reads another's rows. Rows are fingerprints of each
// task's own tokens (fingerprint_rows.h), so a page written in place while
// shared, a copy that misses rows, or a page freed while a fork still holds
// it fails the read-back.
#include <algorithm>
#include <map>
#include <stdexcept>
#include <vector>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "engine/kv_cache/contiguous_cache.h"
#include "engine/kv_cache/page_cache.h"
#include "tests/engine/kv_cache/fingerprint_rows.h"

// In a namespace of its own, TEST_CASEs too: the test program is a unity
// build (tests/meson.build), where other files have helpers of the same names.
namespace test_fork {

using astrai::PageCache;
using astrai::test::compute_rows;
using astrai::test::rows_match;
using Tokens = std::vector<int>;

constexpr int kLayers = 2;
constexpr int kMaxSeqLen = 40;
constexpr int kAlphabet = 3;  // few ids: choices often generate equal pages (duplicate prefixes)

astrai::ModelConfig tiny_config() {
  // kv_dim = 4
  return {.dim = 8, .hidden_dim = 8, .n_layers = kLayers, .n_heads = 2, .n_kv_heads = 1, .vocab_size = kAlphabet,
          .max_seq_len = kMaxSeqLen};
}

int pages_for(int n_tokens, int page_size) { return (n_tokens + page_size - 1) / page_size; }

// Admits `prompt` as task `id`, computes its rows and commits them: a prefilled prompt.
void prefill(astrai::KVCache& cache, int kv_dim, int id, const Tokens& prompt) {
  const int hit = cache.admit(id, prompt).value();
  compute_rows(cache.view(), kLayers, kv_dim, id, prompt, hit, int(prompt.size()));
  cache.commit(id, prompt);
}

// One decode step of a task: token appended, room reserved, its row written, committed.
void decode(astrai::KVCache& cache, int kv_dim, int id, Tokens& tokens, int token) {
  tokens.push_back(token);
  REQUIRE(cache.reserve(id, int(tokens.size())));
  compute_rows(cache.view(), kLayers, kv_dim, id, tokens, int(tokens.size()) - 1, int(tokens.size()));
  cache.commit(id, tokens);
}


TEST_CASE("fork shares every prompt page and copies the partial one on its first write", "[kv_cache][fork]") {
  PageCache cache(tiny_config(), 12, 4);
  const Tokens prompt = {1, 2, 0, 1, 2, 2, 0};  // one full page and 3 tokens of a second
  prefill(cache, cache.kv_dim(), 1, prompt);
  REQUIRE(cache.fork(1, 2, 7));
  REQUIRE(cache.fork(1, 3, 7));
  const auto& pages = cache.pages();
  pages.check_invariants();
  CHECK(cache.stats().blocks_held == 2);  // held once, by three tasks
  const std::vector<int> table(pages.page_table(1).begin(), pages.page_table(1).end());
  for (int child : {2, 3}) {
    CHECK(std::ranges::equal(pages.page_table(child), table));
    CHECK(pages.cached_tokens(child) == 7);
  }
  CHECK(pages.ref_count(table[0]) == 3);
  CHECK(pages.ref_count(table[1]) == 3);
  // The partial page is shared and unregistered: writing it in place would
  // show in the others' rows, so the view refuses and reserve() copies.
  CHECK_THROWS_AS(cache.view().write(0, 2, 7, std::vector<float>(4).data(), std::vector<float>(4).data()),
                  std::logic_error);
  std::map<int, Tokens> tokens = {{1, prompt}, {2, prompt}, {3, prompt}};
  decode(cache, cache.kv_dim(), 2, tokens[2], 0);  // the first writer gets a copy...
  CHECK(pages.page_table(2)[1] != table[1]);
  CHECK(pages.ref_count(table[1]) == 2);
  decode(cache, cache.kv_dim(), 1, tokens[1], 1);  // ...so does the second...
  CHECK(pages.page_table(1)[1] != table[1]);
  decode(cache, cache.kv_dim(), 3, tokens[3], 2);  // ...and the last writes in place
  CHECK(pages.page_table(3)[1] == table[1]);
  CHECK(pages.ref_count(table[0]) == 3);  // the full page stays shared
  CHECK(cache.stats().blocks_held == 4);
  pages.check_invariants();
  for (const auto& [id, t] : tokens) CHECK(rows_match(cache.view(), kLayers, cache.kv_dim(), id, t, t.size()));
  for (const auto& [id, t] : tokens) cache.release(id);
  CHECK(cache.all_free());
}

TEST_CASE("a prompt ending on a page boundary forks without any copy", "[kv_cache][fork]") {
  PageCache cache(tiny_config(), 12, 4);
  Tokens a = {1, 2, 0, 1, 2, 2, 0, 1};
  prefill(cache, cache.kv_dim(), 1, a);
  REQUIRE(cache.fork(1, 2, 8));
  const std::vector<int> table(cache.pages().page_table(1).begin(), cache.pages().page_table(1).end());
  Tokens b = a;
  decode(cache, cache.kv_dim(), 1, a, 0);
  decode(cache, cache.kv_dim(), 2, b, 1);
  // Both full pages are registered prefixes, never written: each task's
  // next position opens a page of its own.
  CHECK(std::ranges::equal(cache.pages().page_table(1).first(2), table));
  CHECK(std::ranges::equal(cache.pages().page_table(2).first(2), table));
  CHECK(cache.stats().blocks_held == 4);
  CHECK(rows_match(cache.view(), kLayers, cache.kv_dim(), 1, a, a.size()));
  CHECK(rows_match(cache.view(), kLayers, cache.kv_dim(), 2, b, b.size()));
}

TEST_CASE("copy-on-write counts as room: out of pages, reserve changes nothing", "[kv_cache][fork]") {
  PageCache cache(tiny_config(), 2, 4);
  const Tokens prompt = {1, 2, 0, 1, 2};
  prefill(cache, cache.kv_dim(), 1, prompt);  // both pages
  REQUIRE(cache.fork(1, 2, 5));               // needs no page
  const astrai::KVCacheStats before = cache.stats();
  CHECK_FALSE(cache.reserve(2, 6));  // its copy of the partial page does not fit
  CHECK(cache.stats().blocks_held == before.blocks_held);
  CHECK(cache.stats().blocks_free == before.blocks_free);
  cache.pages().check_invariants();
  cache.release(1);  // now task 2 holds the partial page alone: no copy needed
  CHECK(cache.reserve(2, 6));
  CHECK(cache.stats().blocks_held == 2);
}

TEST_CASE("PageManager::reserve without a copy list refuses a copy-on-write, changing nothing", "[kv_cache][fork]") {
  astrai::PageManager pages(kMaxSeqLen, 8, 4);
  const Tokens prompt = {1, 2, 0};
  pages.admit(1, prompt);
  pages.commit(1, prompt);
  pages.fork(1, 2, 3);
  CHECK_THROWS_AS(pages.reserve(2, 4), std::logic_error);
  CHECK(pages.ref_count(pages.page_table(2)[0]) == 2);
  std::vector<astrai::PageManager::PageCopy> copies;
  CHECK(pages.reserve(2, 4, &copies));
  REQUIRE(copies.size() == 1);
  CHECK(copies[0].from == pages.page_table(1)[0]);
  CHECK(copies[0].to == pages.page_table(2)[0]);
  pages.check_invariants();
}

TEST_CASE("fork misuse throws and changes nothing", "[kv_cache][fork]") {
  PageCache cache(tiny_config(), 8, 4);
  const Tokens prompt = {1, 2, 0};
  prefill(cache, cache.kv_dim(), 1, prompt);
  CHECK_THROWS_AS(cache.fork(9, 2, 1), std::invalid_argument);  // unknown parent
  CHECK_THROWS_AS(cache.fork(1, 1, 1), std::invalid_argument);  // child exists
  CHECK_THROWS_AS(cache.fork(1, 2, 4), std::invalid_argument);  // past the committed positions
  CHECK_THROWS_AS(cache.fork(1, 2, 0), std::invalid_argument);
  CHECK(cache.stats().tasks == 1);
  cache.pages().check_invariants();
}

TEST_CASE("ContiguousCache forks by copying the rows into a free slot", "[kv_cache][fork]") {
  astrai::ContiguousCache cache(tiny_config(), 2);
  const int kv_dim = tiny_config().kv_dim();
  Tokens a = {1, 2, 0, 1, 2};
  prefill(cache, kv_dim, 1, a);
  REQUIRE(cache.fork(1, 2, 5));
  CHECK_FALSE(cache.fork(1, 3, 5));  // no slot left: no room, nothing changed
  CHECK(cache.stats().tasks == 2);
  Tokens b = a;
  decode(cache, kv_dim, 2, b, 0);
  decode(cache, kv_dim, 1, a, 1);
  CHECK(rows_match(cache.view(), kLayers, kv_dim, 1, a, a.size()));
  CHECK(rows_match(cache.view(), kLayers, kv_dim, 2, b, b.size()));
}

// The property: n choices forked from one prompt (its length drawn around a
// page boundary), stepped in a random interleaving with random tokens of a
// small alphabet (so choices often register equal pages), some cancelled
// (released) and some preempted (released, then readmitted with their own
// tokens and recomputed from the prefix hit, as the scheduler does). After
// every step the cache keeps its invariants and every live choice reads back
// exactly its own rows; the prompt's pages are held once right after the fork.
TEST_CASE("forked choices never see each other's writes (property)", "[kv_cache][fork]") {
  rc::prop("copy-on-write keeps every choice's rows its own", [] {
    const int page_size = *rc::gen::inRange(1, 7);
    const int n = *rc::gen::inRange(1, 6);
    const int boundary = *rc::gen::inRange(1, 4) * page_size;
    const int len = std::clamp(boundary + *rc::gen::inRange(-1, 2), 1, kMaxSeqLen - 1);
    const int max_tokens = *rc::gen::inRange(1, std::min(2 * page_size + 3, kMaxSeqLen - len + 1));
    const Tokens prompt = *rc::gen::container<Tokens>(size_t(len), rc::gen::inRange(0, kAlphabet));
    // Room for every choice's whole sequence and the prompt again: reserve
    // never runs out, so every refusal would be a bug.
    PageCache cache(tiny_config(), n * pages_for(len + max_tokens, page_size) + pages_for(len, page_size), page_size);
    const int kv_dim = cache.kv_dim();

    prefill(cache, kv_dim, 0, prompt);
    std::map<int, Tokens> live = {{0, prompt}};
    for (int c = 1; c < n; ++c) {
      RC_ASSERT(cache.fork(0, c, len));
      live[c] = prompt;
    }
    RC_ASSERT(cache.stats().blocks_held == pages_for(len, page_size));
    cache.pages().check_invariants();

    while (!live.empty()) {
      auto it = std::next(live.begin(), *rc::gen::inRange<int>(0, int(live.size())));
      const int id = it->first;
      Tokens& tokens = it->second;
      const int action = *rc::gen::inRange(0, 100);
      if (action < 7 || int(tokens.size()) >= len + max_tokens) {  // cancelled or done
        cache.release(id);
        live.erase(it);
      } else if (action < 20) {  // preempted and readmitted
        cache.release(id);
        const auto hit = cache.admit(id, tokens);
        RC_ASSERT(hit.has_value());
        compute_rows(cache.view(), kLayers, kv_dim, id, tokens, *hit, int(tokens.size()));
        cache.commit(id, tokens);
      } else {
        tokens.push_back(*rc::gen::inRange(0, kAlphabet));
        RC_ASSERT(cache.reserve(id, int(tokens.size())));
        compute_rows(cache.view(), kLayers, kv_dim, id, tokens, int(tokens.size()) - 1, int(tokens.size()));
        cache.commit(id, tokens);
      }
      cache.pages().check_invariants();
      for (const auto& [other, t] : live) RC_ASSERT(rows_match(cache.view(), kLayers, kv_dim, other, t, t.size()));
    }
    RC_ASSERT(cache.all_free());
  });
}

}  // namespace test_fork
