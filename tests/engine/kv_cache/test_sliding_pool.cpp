// PageCache with a pool of its own for the sliding-window layers (RapidCheck
// stateful test): random admit / decode / fork / release / release-all
// sequences over prompts drawn from a few shared stems and a 3-token
// alphabet, so prefixes are shared, hit, evicted and forked often. After
// every command:
//   - both pools keep their invariants (PagedKVCache::check_invariants: every
//     tag names a registered full page, reference counts equal page tables);
//   - every task reads back exactly the fingerprint rows of its own tokens
//     (fingerprint_rows.h) on the full layer at every committed position and
//     on the sliding layer at every position its next query reads, so a page
//     shared under the wrong prefix, dropped too early or copied wrongly
//     shows at once; a position the window has passed is refused;
//   - no task holds more sliding pages than its window needs
//     (WindowPageManager::window_pages), however long its context;
//   - an out-of-room answer changes nothing in either pool.
// Hits are checked for exactness by the rows, not predicted: a hit is the
// full layers' hit cut to the longest one whose window is still cached.
#include <algorithm>
#include <cstdint>
#include <map>
#include <ostream>
#include <vector>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "engine/kv_cache/page_cache.h"
#include "tests/engine/kv_cache/fingerprint_rows.h"

// In a namespace of its own, TEST_CASEs too: the test program is a unity build.
namespace test_sliding_pool {

using astrai::PageCache;
using Tokens = std::vector<int>;

constexpr int kMaxSeqLen = 40;
constexpr int kAlphabet = 3;

// Two layers, kv_dim 4: layer 0 attends to everything, layer 1 over the window.
astrai::ModelConfig windowed_config(int window) {
  astrai::ModelConfig c{.dim = 8, .hidden_dim = 8, .n_layers = 2, .n_heads = 2, .n_kv_heads = 1,
                        .vocab_size = kAlphabet, .max_seq_len = kMaxSeqLen};
  c.sliding_window = window;
  c.sliding_layers = {false, true};
  return c;
}

// A value drawn uniformly from [lo, hi) whatever the test's size (inRange
// alone scales with it, so the first tests would draw only near lo: admit
// only, one-token windows, one page).
int uniform(int lo, int hi) { return *rc::gen::resize(100, rc::gen::inRange(lo, hi)); }

// Every admitted task's committed tokens.
using Tasks = std::map<int, Tokens>;

// Rows [from, to) of layer `layer` read back the task's own fingerprints.
bool layer_rows_match(PageCache& cache, int layer, int task, const Tokens& tokens, int from, int to) {
  auto& view = cache.view();
  for (int pos = from; pos < to; ++pos)
    for (int j = 0; j < cache.kv_dim(); ++j)
      if (view.key(layer, task, pos)[j] != astrai::test::fingerprint(tokens, size_t(pos) + 1, layer, 0, j) ||
          view.value(layer, task, pos)[j] != astrai::test::fingerprint(tokens, size_t(pos) + 1, layer, 1, j))
        return false;
  return true;
}

void expect_consistent(const Tasks& tasks, PageCache& cache) {
  cache.check_invariants();
  const astrai::WindowPageManager& sliding = *cache.sliding_pages();
  RC_ASSERT(cache.stats().tasks == int(tasks.size()));
  for (const auto& [task, tokens] : tasks) {
    const int n = int(tokens.size());
    RC_ASSERT(cache.pages().cached_tokens(task) == n);
    RC_ASSERT(layer_rows_match(cache, 0, task, tokens, 0, n));
    // The next query (position n) reads n - window + 1 .. n - 1 on layer 1.
    const int first = std::max(0, n - sliding.window() + 1);
    RC_ASSERT(layer_rows_match(cache, 1, task, tokens, first, n));
    RC_ASSERT(sliding.held_by(task) <= sliding.window_pages());
    const int dropped_end = sliding.first_kept(n) / cache.page_size() * cache.page_size();
    if (dropped_end > 0) RC_ASSERT_THROWS_AS(cache.view().key(1, task, dropped_end - 1), std::out_of_range);
  }
}

void compute_rows(PageCache& cache, int task, const Tokens& tokens, int from, int to) {
  astrai::test::compute_rows(cache.view(), 2, cache.kv_dim(), task, tokens, from, to);
}

bool same_room(const astrai::KVCacheStats& a, const astrai::KVCacheStats& b) {
  return a.blocks_free == b.blocks_free && a.blocks_cached == b.blocks_cached &&
         a.sliding_blocks_free == b.sliding_blocks_free && a.sliding_blocks_cached == b.sliding_blocks_cached;
}

// One random step on the cache; `tasks` follows what the cache answered.
struct Hits {
  int within_window = 0, past_window = 0;
};

void step(PageCache& cache, Tasks& tasks, std::vector<Tokens>& corpus, int& next_task, Hits& hits) {
  const int op = uniform(0, 10);
  const auto before = cache.stats();
  if (tasks.empty() || (op < 3 && tasks.size() < 6)) {  // admit
    const Tokens& stem = *rc::gen::elementOf(corpus);
    Tokens prompt(stem.begin(), stem.begin() + size_t(uniform(0, int(stem.size()) + 1)));
    const auto tail = *rc::gen::container<Tokens>(size_t(uniform(0, 4)), rc::gen::inRange(0, kAlphabet));
    prompt.insert(prompt.end(), tail.begin(), tail.end());
    if (prompt.empty() || prompt.size() > size_t(kMaxSeqLen)) return;
    const int task = next_task++;
    const auto hit = cache.admit(task, prompt);
    if (!hit) {
      RC_ASSERT(same_room(before, cache.stats()));  // out of room: no side effect in either pool
      RC_ASSERT(!cache.has_task(task));
      return;
    }
    RC_ASSERT(*hit % cache.page_size() == 0);
    RC_ASSERT(*hit < int(prompt.size()));
    if (*hit > 0) ++(*hit >= cache.sliding_pages()->window() ? hits.past_window : hits.within_window);
    compute_rows(cache, task, prompt, *hit, int(prompt.size()));
    cache.commit(task, prompt);
    tasks[task] = prompt;
    return;
  }
  const int task = rc::gen::elementOf(tasks).operator*().first;
  Tokens& tokens = tasks.at(task);
  if (op < 8) {  // decode one token
    if (tokens.size() >= size_t(kMaxSeqLen)) return;
    tokens.push_back(*rc::gen::inRange(0, kAlphabet));
    const int n = int(tokens.size());
    if (!cache.reserve(task, n)) {
      RC_ASSERT(same_room(before, cache.stats()));
      tokens.pop_back();
      return;
    }
    compute_rows(cache, task, tokens, n - 1, n);
    cache.commit(task, tokens);
  } else if (op == 8 && tasks.size() < 6) {  // fork, as the scheduler does: at the committed length
    const int child = next_task++;
    RC_ASSERT(cache.fork(task, child, int(tokens.size())));
    tasks[child] = tokens;
  } else {  // release (finished, cancelled, or preempted to come back as a prompt)
    corpus.push_back(tokens);
    cache.release(task);
    tasks.erase(task);
  }
}

TEST_CASE("A sliding pool keeps only the window and stays exact", "[kv_cache][sliding]") {
  rc::prop("random admit, decode, fork and release", [] {
    const int window = uniform(1, 13);
    const int page_size = uniform(1, 7);
    // Half the time few full pages, so that the full layers evict often
    // (and their sliding twins must be untied).
    const int n_pages = uniform(1, *rc::gen::element(9, 25));
    const int sliding_pages = uniform(1, 25);
    const bool colliding = *rc::gen::arbitrary<bool>();
    astrai::PrefixHash hash = astrai::default_prefix_hash;
    if (colliding) hash = [](uint64_t, std::span<const int>) { return uint64_t(7); };
    PageCache cache(windowed_config(window), n_pages, page_size, hash, sliding_pages);
    RC_ASSERT(cache.sliding_pages() != nullptr);
    std::vector<Tokens> corpus;
    // Short stems half the time, so that small pools still admit, share and evict.
    const int longest_stem = *rc::gen::element(12, kMaxSeqLen);
    for (int i = 0; i < 3; ++i)
      corpus.push_back(*rc::gen::container<Tokens>(size_t(uniform(1, longest_stem + 1)),
                                                   rc::gen::inRange(0, kAlphabet)));
    Tasks tasks;
    int next_task = 100;
    Hits hits;
    const int steps = uniform(1, 60);
    for (int i = 0; i < steps; ++i) {
      step(cache, tasks, corpus, next_task, hits);
      expect_consistent(tasks, cache);
    }
    for (const auto& [task, t] : tasks) cache.release(task);
    RC_ASSERT(cache.all_free());
    RC_ASSERT(cache.stats().sliding_blocks_held == 0);
    cache.check_invariants();
    if (hits.within_window > 0) RC_TAG("a hit within the window");
    if (hits.past_window > 0) RC_TAG("a hit past the window");
  });
}

}  // namespace test_sliding_pool
