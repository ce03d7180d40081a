// PageCache against PageCacheModel (RapidCheck stateful test): random admit /
// decode / release / readmit (a preempted task recomputed) sequences over
// prompts drawn from a few shared stems, with the real and with a colliding
// hash. After every command the cache must agree with the model on every hit
// and every out-of-room answer, keep its invariants, and every task must read
// back, through the view, exactly the rows "computed" for its own tokens:
// row = fingerprint(all tokens up to that position), as real K/V depend on
// the whole prefix. So a wrongly shared page or a page owned twice shows up.
#include <cstdint>
#include <map>
#include <ostream>
#include <vector>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>
#include <rapidcheck/state.h>

#include "engine/kv_cache/page_cache.h"
#include "tests/engine/kv_cache/fingerprint_rows.h"
#include "tests/engine/kv_cache/page_cache_model.h"

// In a namespace of its own, TEST_CASEs too: the test program is a unity
// build (tests/meson.build), where other files have helpers of the same names.
namespace test_page_cache_model {

using astrai::PageCache;
using astrai::test::PageCacheModel;
using Tokens = std::vector<int>;

constexpr int kLayers = 2;
constexpr int kMaxSeqLen = 40;
constexpr int kAlphabet = 3;  // few token ids: prompts often share pages

astrai::ModelConfig tiny_config() {
  // kv_dim = 4
  return {.dim = 8, .hidden_dim = 8, .n_layers = kLayers, .n_heads = 2, .n_kv_heads = 1, .vocab_size = kAlphabet,
          .max_seq_len = kMaxSeqLen};
}

void compute_rows(PageCache& cache, int task, const Tokens& tokens, int from, int to) {
  astrai::test::compute_rows(cache.view(), kLayers, cache.kv_dim(), task, tokens, from, to);
}

struct State {
  PageCacheModel model;
  std::vector<Tokens> corpus;  // prompt stems, plus the tokens of released tasks
  int next_task = 100;
};

using Command = rc::state::Command<State, PageCache>;

void expect_matches(const State& s, const PageCache& cache) {
  cache.pages().check_invariants();
  const astrai::KVCacheStats stats = cache.stats();
  RC_ASSERT(stats.blocks_free == s.model.n_free());
  RC_ASSERT(stats.blocks_held == s.model.n_held());
  RC_ASSERT(stats.blocks_cached == s.model.n_cached());
  RC_ASSERT(stats.tasks == int(s.model.tasks().size()));
  // Without forks, only registered prefixes are shared (check_invariants
  // allows a fork's shared partial page; none is made here).
  std::map<int, int> holders;
  for (const auto& [task, t] : s.model.tasks())
    for (const int page : cache.pages().page_table(task)) ++holders[page];
  for (const auto& [page, n] : holders) RC_ASSERT(n == 1 || cache.pages().is_registered(page));
  auto& view = const_cast<PageCache&>(cache).view();
  for (const auto& [task, t] : s.model.tasks()) {
    RC_ASSERT(cache.pages().cached_tokens(task) == int(t.tokens.size()));
    RC_ASSERT(astrai::test::rows_match(view, kLayers, cache.kv_dim(), task, t.tokens, t.tokens.size()));
  }
}

struct Admit : Command {
  int task;
  Tokens prompt;
  explicit Admit(const State& s) {
    RC_PRE(s.model.tasks().size() < 6);
    task = s.next_task;
    const Tokens& stem = *rc::gen::elementOf(s.corpus);
    prompt.assign(stem.begin(), stem.begin() + *rc::gen::inRange<size_t>(0, stem.size() + 1));
    const auto tail = *rc::gen::container<Tokens>(*rc::gen::inRange(0, 4), rc::gen::inRange(0, kAlphabet));
    prompt.insert(prompt.end(), tail.begin(), tail.end());
    RC_PRE(!prompt.empty() && prompt.size() <= size_t(kMaxSeqLen));
  }
  void apply(State& s) const override {
    ++s.next_task;
    if (s.model.admit(task, prompt)) s.model.commit(task, prompt);
  }
  void run(const State& s, PageCache& cache) const override {
    const auto expected = State(s).model.admit(task, prompt);
    const auto stats_before = cache.stats();
    const auto hit = cache.admit(task, prompt);
    RC_ASSERT(hit == expected);
    if (hit) {
      compute_rows(cache, task, prompt, *hit, int(prompt.size()));
      cache.commit(task, prompt);
    } else {
      const auto stats_after = cache.stats();  // out of room: no side effect
      RC_ASSERT(stats_after.blocks_free == stats_before.blocks_free);
      RC_ASSERT(stats_after.blocks_cached == stats_before.blocks_cached);
      RC_ASSERT(!cache.has_task(task));
    }
    expect_matches(nextState(s), cache);
  }
  void show(std::ostream& os) const override {
    os << "admit task " << task << " prompt";
    for (const int t : prompt) os << ' ' << t;
  }
};

struct Decode : Command {
  int task;
  int token;
  explicit Decode(const State& s) {
    RC_PRE(!s.model.tasks().empty());
    task = rc::gen::elementOf(s.model.tasks()).operator*().first;
    RC_PRE(s.model.tasks().at(task).tokens.size() < size_t(kMaxSeqLen));
    token = *rc::gen::inRange(0, kAlphabet);
  }
  Tokens grown(const State& s) const {
    Tokens tokens = s.model.tasks().at(task).tokens;
    tokens.push_back(token);
    return tokens;
  }
  void apply(State& s) const override {
    const Tokens tokens = grown(s);
    if (s.model.reserve(task, int(tokens.size()))) s.model.commit(task, tokens);
  }
  void run(const State& s, PageCache& cache) const override {
    const Tokens tokens = grown(s);
    const int n = int(tokens.size());
    const bool expected = State(s).model.reserve(task, n);
    RC_ASSERT(cache.reserve(task, n) == expected);
    if (expected) {
      compute_rows(cache, task, tokens, n - 1, n);
      cache.commit(task, tokens);
    }
    expect_matches(nextState(s), cache);
  }
  void show(std::ostream& os) const override { os << "decode task " << task << " token " << token; }
};

struct Release : Command {
  int task;
  explicit Release(const State& s) {
    RC_PRE(!s.model.tasks().empty());
    task = rc::gen::elementOf(s.model.tasks()).operator*().first;
  }
  void apply(State& s) const override {
    // Preemption: the tokens may come back later as a new prompt (recompute).
    s.corpus.push_back(s.model.tasks().at(task).tokens);
    s.model.release(task);
  }
  void run(const State& s, PageCache& cache) const override {
    cache.release(task);
    expect_matches(nextState(s), cache);
  }
  void show(std::ostream& os) const override { os << "release task " << task; }
};

struct ReleaseAll : Command {
  void apply(State& s) const override {
    while (!s.model.tasks().empty()) s.model.release(s.model.tasks().begin()->first);
  }
  void run(const State& s, PageCache& cache) const override {
    for (const auto& [task, t] : s.model.tasks()) cache.release(task);
    RC_ASSERT(cache.all_free());
    RC_ASSERT(cache.stats().blocks_free + cache.stats().blocks_cached == cache.n_pages());
    expect_matches(nextState(s), cache);
  }
  void show(std::ostream& os) const override { os << "release all"; }
};

void check_against_model(bool colliding_hash) {
  const int page_size = *rc::gen::inRange(1, 7);
  const int n_pages = *rc::gen::inRange(1, 25);
  State initial{PageCacheModel(n_pages, page_size), {}, 100};
  for (int i = 0; i < 3; ++i)
    initial.corpus.push_back(*rc::gen::container<Tokens>(*rc::gen::inRange(1, kMaxSeqLen + 1),
                                                         rc::gen::inRange(0, kAlphabet)));
  astrai::PrefixHash hash = astrai::default_prefix_hash;
  if (colliding_hash) hash = [](uint64_t, std::span<const int>) { return uint64_t(7); };
  PageCache cache(tiny_config(), n_pages, page_size, hash);
  rc::state::check(initial, cache,
                   rc::state::gen::execOneOfWithArgs<Admit, Admit, Decode, Decode, Decode, Release, ReleaseAll>());
}


TEST_CASE("PageCache follows the prefix-level model", "[kv_cache][page_cache]") {
  rc::prop("with the default prefix hash", [] { check_against_model(false); });
  rc::prop("with a hash that maps every page to the same value", [] { check_against_model(true); });
}

}  // namespace test_page_cache_model
