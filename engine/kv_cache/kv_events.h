// KV cache events: what a paged cache tells a prefix-aware router about the
// prefixes it can serve from cache, as vLLM's KV events do (docs/kv-cache.md,
// "KV cache events"). Plain values, no transport: the server's publisher
// (server/kv_events_publisher.h) puts them on the wire.
//
// A block is a registered page: a full page whose chained prefix hash
// (page_manager.h) names everything up to its last token.
//   KVBlockStored       pages registered as reusable prefixes, in chain order
//   KVBlockRemoved      registered pages evicted (their content is gone)
//   KVAllBlocksCleared  every registered page dropped (a prefix cache reset)
// Replaying a cache's events in order into a set of block hashes gives the
// set of its registered pages (tests/engine/kv_cache/test_kv_events.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <variant>
#include <vector>

namespace astrai {

struct KVBlockStored {
  std::vector<uint64_t> block_hashes;        // consecutive pages of one chain, first to last
  std::optional<uint64_t> parent_block_hash;  // the page before the first; none when it starts a prompt
  std::vector<int> token_ids;                 // block_hashes.size() * page_size tokens, the pages' own
};

struct KVBlockRemoved {
  std::vector<uint64_t> block_hashes;
};

struct KVAllBlocksCleared {};

using KVCacheEvent = std::variant<KVBlockStored, KVBlockRemoved, KVAllBlocksCleared>;

// A registered page as the cache holds it (what a replay of its events must
// reproduce; GET /debug/kv_blocks lists them).
struct KVCachedBlock {
  uint64_t block_hash = 0;
  std::optional<uint64_t> parent_block_hash;
  std::vector<int> token_ids;  // the page's page_size tokens
};

// Who receives the events: one call per scheduler step that made any, on the
// scheduler's thread, so it must return at once (queue and go; never wait on
// a subscriber).
class KVEventSink {
 public:
  virtual ~KVEventSink() = default;
  virtual void publish(std::vector<KVCacheEvent> events) = 0;
};

}  // namespace astrai
