// PageManager's KV cache events (kv_events.h) against the cache's own state.
//
// The oracle is a replay, written here: a map from block hash to the
// (parent hash, tokens) its BlockStored said, BlockRemoved erasing, and
// AllBlocksCleared clearing it. Random admit / grow (reserve with
// copy-on-write, commit) / fork / release / release-all / reset sequences
// over few pages and a 2-token alphabet (prompts share pages, pages are
// evicted often) must keep, after every command:
//   - the replay equal to the registered pages: their number (is_registered
//     over every page), and each one's hash, parent hash and tokens;
//   - every replayed block's hash the chained hash of its parent's and its
//     own tokens (recomputed here), and its parent in the replay too;
//   - for every task, the hash chain of its own committed tokens (computed
//     here) in the replay for each of its pages that is registered;
//   - an event for a page only where its registration changed: a BlockStored
//     never names a hash already there, a BlockRemoved only one that is.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "engine/kv_cache/page_manager.h"

namespace {

using astrai::KVAllBlocksCleared;
using astrai::KVBlockRemoved;
using astrai::KVBlockStored;
using astrai::KVCacheEvent;
using astrai::PageManager;
using Tokens = std::vector<int>;

constexpr int kMaxSeqLen = 24;

struct Block {
  std::optional<uint64_t> parent;
  Tokens tokens;
  bool operator==(const Block&) const = default;
};
using Replay = std::map<uint64_t, Block>;  // block hash -> what its BlockStored said

uint64_t chained(std::optional<uint64_t> parent, const Tokens& tokens) {
  return astrai::default_prefix_hash(parent.value_or(astrai::kRootPrefixHash), tokens);
}

// Applies events in order; false (with *why) at the first one that cannot be
// right whatever the cache holds.
bool apply(Replay& replay, const std::vector<KVCacheEvent>& events, int page_size, std::string* why) {
  for (const KVCacheEvent& event : events) {
    if (const auto* stored = std::get_if<KVBlockStored>(&event)) {
      if (stored->block_hashes.empty() ||
          stored->token_ids.size() != stored->block_hashes.size() * size_t(page_size))
        return *why = "a BlockStored with " + std::to_string(stored->token_ids.size()) + " tokens for " +
                      std::to_string(stored->block_hashes.size()) + " blocks", false;
      std::optional<uint64_t> parent = stored->parent_block_hash;
      for (size_t i = 0; i < stored->block_hashes.size(); ++i) {
        const uint64_t hash = stored->block_hashes[i];
        if (replay.contains(hash)) return *why = "block " + std::to_string(hash) + " stored twice", false;
        const auto first = stored->token_ids.begin() + long(i) * page_size;
        replay[hash] = Block{parent, Tokens(first, first + page_size)};
        parent = hash;
      }
    } else if (const auto* removed = std::get_if<KVBlockRemoved>(&event)) {
      for (const uint64_t hash : removed->block_hashes)
        if (replay.erase(hash) == 0) return *why = "block " + std::to_string(hash) + " removed but not stored", false;
    } else {
      replay.clear();
    }
  }
  return true;
}

struct Run {
  PageManager pages;
  Replay replay;
  std::map<int, Tokens> tasks;  // committed tokens of each admitted task
  std::vector<Tokens> corpus;   // prompts seen, to draw shared prefixes from
  int next_task = 1;

  Run(int n_pages, int page_size) : pages(kMaxSeqLen, n_pages, page_size) { pages.record_events(true); }

  void check_events() {
    std::string why;
    if (!apply(replay, pages.take_events(), pages.page_size(), &why)) RC_FAIL(why);
    pages.check_invariants();
    int registered = 0;
    for (int p = 0; p < pages.n_pages(); ++p) registered += pages.is_registered(p);
    RC_ASSERT(int(replay.size()) == registered);
    Replay own;  // the registered pages as the cache lists them
    for (const auto& block : pages.registered_blocks())
      own[block.block_hash] = Block{block.parent_block_hash, block.token_ids};
    RC_ASSERT(own == replay);
    for (const auto& [hash, block] : replay) {
      RC_ASSERT(chained(block.parent, block.tokens) == hash);  // the parent hash and tokens it was stored with
      // A bool first: RC_ASSERT captures its operands, and its captured ||
      // does not short-circuit, so *block.parent was read when it had none
      // (libstdc++'s assertions caught it in the sanitizer build).
      const bool parent_replayed = !block.parent || replay.contains(*block.parent);
      RC_ASSERT(parent_replayed);
    }
    const int P = pages.page_size();
    for (const auto& [id, tokens] : tasks) {
      const auto table = pages.page_table(id);
      std::optional<uint64_t> parent;
      for (size_t i = 0; (i + 1) * size_t(P) <= tokens.size(); ++i) {
        const uint64_t hash = chained(parent, Tokens(tokens.begin() + long(i) * P, tokens.begin() + long(i + 1) * P));
        if (pages.is_registered(table[i])) RC_ASSERT(replay.contains(hash));
        parent = hash;
      }
    }
  }

  int any_task() const {
    auto it = tasks.begin();
    std::advance(it, *rc::gen::inRange<size_t>(0, tasks.size()));
    return it->first;
  }

  void admit() {
    Tokens prompt;
    if (!corpus.empty() && *rc::gen::arbitrary<bool>()) {
      const Tokens& stem = *rc::gen::elementOf(corpus);
      prompt.assign(stem.begin(), stem.begin() + *rc::gen::inRange<size_t>(0, stem.size() + 1));
    }
    const auto tail = *rc::gen::container<Tokens>(*rc::gen::inRange(0, 7), rc::gen::inRange(0, 2));
    prompt.insert(prompt.end(), tail.begin(), tail.end());
    if (prompt.empty() || prompt.size() > size_t(kMaxSeqLen)) return;
    corpus.push_back(prompt);
    const int id = next_task++;
    if (!pages.admit(id, prompt)) return;
    pages.commit(id, prompt);  // the prefill computed the whole prompt
    tasks[id] = prompt;
  }

  void grow() {
    if (tasks.empty()) return;
    const int id = any_task();
    Tokens tokens = tasks[id];
    if (tokens.size() >= size_t(kMaxSeqLen)) return;
    tokens.push_back(*rc::gen::inRange(0, 2));
    std::vector<PageManager::PageCopy> copies;
    if (!pages.reserve(id, int(tokens.size()), &copies)) return;
    pages.commit(id, tokens);
    tasks[id] = tokens;
  }

  void fork() {
    if (tasks.empty() || tasks.size() >= 6) return;
    const int parent = any_task();
    const Tokens& tokens = tasks[parent];
    const int n = *rc::gen::inRange<int>(1, int(tokens.size()) + 1);
    const int child = next_task++;
    pages.fork(parent, child, n);
    tasks[child] = Tokens(tokens.begin(), tokens.begin() + n);
  }

  void release() {
    if (tasks.empty()) return;
    const int id = any_task();
    pages.release(id);
    tasks.erase(id);
  }

  void release_all() {
    for (const auto& [id, tokens] : tasks) pages.release(id);
    tasks.clear();
  }

  void reset() {
    const bool idle = tasks.empty();
    RC_ASSERT(pages.reset_prefix_cache() == idle);
    if (idle) RC_ASSERT(pages.n_registered() == 0 && pages.stats().blocks_free == pages.n_pages());
  }
};

}  // namespace

TEST_CASE("Replaying PageManager's events gives its registered pages after every command", "[kv_cache][events]") {
  rc::prop("random admit/grow/fork/release/reset sequences", [] {
    // Few pages, so that admissions and growth evict often.
    Run run(*rc::gen::inRange(1, 25), *rc::gen::inRange(1, 5));
    const int steps = *rc::gen::inRange(1, 80);
    for (int step = 0; step < steps; ++step) {
      switch (*rc::gen::weightedElement<int>({{4, 0}, {5, 1}, {2, 2}, {3, 3}, {1, 4}, {1, 5}})) {
        case 0: run.admit(); break;
        case 1: run.grow(); break;
        case 2: run.fork(); break;
        case 3: run.release(); break;
        case 4: run.release_all(); break;
        default: run.reset(); break;
      }
      run.check_events();
    }
  });
}

TEST_CASE("PageManager's events: one chain per commit, evictions, resets, and nothing unless asked",
          "[kv_cache][events]") {
  constexpr int P = 2;
  PageManager pages(16, 4, P);
  REQUIRE(pages.admit(1, Tokens{5, 6, 7, 8, 9}) == 0);
  pages.commit(1, Tokens{5, 6, 7, 8, 9});
  CHECK(pages.take_events().empty());  // not recording yet
  pages.release(1);

  pages.record_events(true);
  REQUIRE(pages.admit(2, Tokens{1, 2, 3, 4, 1}) == 0);  // 3 pages: the 2 free ones and the LRU cached one
  auto events = pages.take_events();
  REQUIRE(events.size() == 1);  // the deeper of task 1's cached pages goes first
  const uint64_t h56 = chained(std::nullopt, {5, 6}), h78 = chained(h56, {7, 8});
  CHECK(std::get<KVBlockRemoved>(events[0]).block_hashes == std::vector<uint64_t>{h78});

  pages.commit(2, Tokens{1, 2, 3, 4, 1});
  events = pages.take_events();
  REQUIRE(events.size() == 1);
  const auto& stored = std::get<KVBlockStored>(events[0]);
  const uint64_t h12 = chained(std::nullopt, {1, 2}), h34 = chained(h12, {3, 4});
  CHECK(stored.block_hashes == std::vector<uint64_t>{h12, h34});
  CHECK_FALSE(stored.parent_block_hash.has_value());
  CHECK(stored.token_ids == Tokens{1, 2, 3, 4});

  REQUIRE(pages.reserve(2, 6));
  pages.commit(2, Tokens{1, 2, 3, 4, 1, 1});  // the third page fills: its parent is the second
  events = pages.take_events();
  REQUIRE(events.size() == 1);
  CHECK(std::get<KVBlockStored>(events[0]).parent_block_hash == h34);

  CHECK_FALSE(pages.reset_prefix_cache());  // task 2 holds pages
  CHECK(pages.take_events().empty());
  pages.release(2);
  CHECK(pages.registered_blocks().size() == 4);  // [5 6], [1 2], [3 4], [1 1]
  CHECK(pages.reset_prefix_cache());
  events = pages.take_events();
  REQUIRE(events.size() == 1);
  CHECK(std::holds_alternative<KVAllBlocksCleared>(events[0]));
  CHECK(pages.registered_blocks().empty());
  CHECK(pages.stats().blocks_free == 4);
  pages.check_invariants();
}
