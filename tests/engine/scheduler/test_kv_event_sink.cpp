// The scheduler hands the paged cache's events to a sink after each step:
// random requests sharing prefixes through a cache small enough to evict, and
// at the end the sink's events, replayed into a map of block hashes, equal
// the blocks the engine's cache holds (read on the scheduler thread by
// cached_blocks()); outputs still equal the reference's. Also: a contiguous
// cache refuses a sink, a prefix cache reset is reported as AllBlocksCleared,
// with_cache() works after shutdown.
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/engine/scheduler/engine_harness.h"

namespace {

using namespace astrai;
using namespace astrai::test;

// Records every batch; called on the scheduler thread, read on the test's.
struct RecordingSink final : KVEventSink {
  std::mutex mutex;
  std::vector<std::vector<KVCacheEvent>> batches;
  void publish(std::vector<KVCacheEvent> events) override {
    std::lock_guard lock(mutex);
    batches.push_back(std::move(events));
  }
  // block hash -> parent hash, from the events in order.
  std::map<uint64_t, std::optional<uint64_t>> replay(int* removed) {
    std::lock_guard lock(mutex);
    std::map<uint64_t, std::optional<uint64_t>> blocks;
    for (const auto& batch : batches) {
      for (const KVCacheEvent& event : batch) {
        if (const auto* s = std::get_if<KVBlockStored>(&event)) {
          std::optional<uint64_t> parent = s->parent_block_hash;
          for (const uint64_t h : s->block_hashes) {
            blocks[h] = parent;
            parent = h;
          }
        } else if (const auto* r = std::get_if<KVBlockRemoved>(&event)) {
          for (const uint64_t h : r->block_hashes) *removed += int(blocks.erase(h));
        } else {
          blocks.clear();
        }
      }
    }
    return blocks;
  }
};

std::map<uint64_t, std::optional<uint64_t>> held(const InferenceEngine& engine) {
  std::map<uint64_t, std::optional<uint64_t>> blocks;
  for (const KVCachedBlock& b : engine.cached_blocks()) blocks[b.block_hash] = b.parent_block_hash;
  return blocks;
}

}  // namespace

TEST_CASE("The engine's KV cache events replay to the blocks its cache holds", "[engine][kv_events]") {
  const TinyModel& m = tiny_model();
  std::mt19937 rng(4242);
  const std::vector<int> stem = random_prompt(rng, 13);
  std::vector<PlannedRequest> requests;
  for (int i = 0; i < 24; ++i) {
    PlannedRequest r;
    r.prompt.assign(stem.begin(), stem.begin() + 1 + i % 13);  // prefixes of one stem: shared pages
    const auto tail = random_prompt(rng, 1 + i % 7);
    r.prompt.insert(r.prompt.end(), tail.begin(), tail.end());
    r.max_tokens = 4 + i % 9;
    r.sampling.temperature = 0.0f;  // greedy: the reference gives the same tokens
    requests.push_back(r);
  }
  compute_expected(requests);
  // 32 pages of 4 tokens: two contexts' worth, for 4 running requests of up to 32 tokens; evictions come soon.
  InferenceEngine engine(m.weights, m.tokenizer, paged_config(4, 8, 32));
  auto sink = std::make_shared<RecordingSink>();
  engine.set_kv_event_sink(sink);
  auto logs = run_requests(engine, requests, Submission::Together);
  check_outputs(requests, logs);
  require_all_free(engine);
  int removed = 0;
  const auto replayed = sink->replay(&removed);
  CHECK(removed > 0);  // the premise: evictions happened
  CHECK(!replayed.empty());
  CHECK(replayed == held(engine));

  // Idle, a reset clears the cache and says so (PageManager's own test has it refused while a task holds pages).
  REQUIRE(engine.reset_prefix_cache());
  CHECK(engine.cached_blocks().empty());
  CHECK(sink->replay(&removed).empty());
  {
    std::lock_guard lock(sink->mutex);
    REQUIRE(!sink->batches.empty());
    CHECK(std::holds_alternative<KVAllBlocksCleared>(sink->batches.back().back()));
  }
  engine.shutdown();
  CHECK(engine.cached_blocks().empty());  // the loop is gone: with_cache() runs on this thread
}

TEST_CASE("A contiguous cache has no KV cache events to give", "[engine][kv_events]") {
  const TinyModel& m = tiny_model();
  InferenceEngine engine(m.weights, m.tokenizer, contiguous_config(2, 8));
  CHECK_THROWS_AS(engine.set_kv_event_sink(std::make_shared<RecordingSink>()), std::invalid_argument);
  engine.set_kv_event_sink(nullptr);  // none: fine
  CHECK(engine.cached_blocks().empty());
  CHECK(engine.reset_prefix_cache());  // nothing held, nothing to drop
}
