// The KV cache as the executor and the scheduler see it: room for the keys and
// values of many tasks (requests), handed out and taken back per task. Two
// implementations: ContiguousCache (one max_seq_len slot per task, the
// default) and PageCache (fixed-size pages shared between tasks whose prompts
// start alike). See docs/kv-cache.md.
//
// Running out of room is a normal event, not an error: admit() and reserve()
// then report failure and change nothing, and the scheduler decides whom to
// preempt (release now, recompute later). Misuse (an unknown task, a length
// past the model's context) throws std::invalid_argument.
//
// Life of a task:
//   hit = admit(id, prompt)        // nullopt: no room now; else K/V of prompt[0, hit) are cached
//   forward over prompt[hit, len)  // writes through view(), seq = id
//   commit(id, prompt)             // full pages become shareable prefixes
//   loop: reserve(id, n + 1); forward one token at position n; commit(id, tokens[0, n + 1))
//   release(id)
// n choices of one prompt: after the prompt's commit, fork(id, choice_id, len)
// gives each further choice the prompt's K/V without computing them again.
// Not thread-safe: one thread (the scheduler's) drives a cache.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "engine/kv_cache/kv_events.h"
#include "reference/kv_cache_view.h"

namespace astrai {

// Occupancy in blocks: a block is a page of a PageCache or a slot of a
// ContiguousCache. blocks_total = blocks_held + blocks_cached + blocks_free.
struct KVCacheStats {
  int block_tokens = 0;   // tokens per block: the page size, or max_seq_len for a slot
  int blocks_total = 0;
  int blocks_held = 0;    // referenced by at least one task
  int blocks_cached = 0;  // referenced by none, still holding a reusable prefix (reclaimed when needed)
  int blocks_free = 0;
  int tasks = 0;          // tasks admitted and not yet released
  // A paged cache whose sliding-window layers have a pool of their own
  // (page_cache.h): that pool's pages, of block_tokens each (all 0
  // otherwise). The blocks_* above are then the full layers' pages.
  int sliding_blocks_total = 0;
  int sliding_blocks_held = 0;
  int sliding_blocks_cached = 0;
  int sliding_blocks_free = 0;
};

class KVCache {
 public:
  virtual ~KVCache() = default;

  // Reserves room for positions [0, prompt.size()) of a new task. Returns how
  // many leading prompt tokens already have their K/V cached (a prefix hit:
  // the forward pass starts at that position; always < prompt.size(), and 0
  // for ContiguousCache), or std::nullopt, with no side effect, when there is
  // no room now. Throws std::invalid_argument when task_id is already
  // admitted, the prompt is empty or longer than the model's context.
  virtual std::optional<int> admit(int task_id, std::span<const int> prompt) = 0;

  // Makes room for positions [0, n_tokens) of the task (decode growth).
  // Returns false, with no side effect, when there is no room now. Throws
  // std::invalid_argument for an unknown task or n_tokens past the context.
  virtual bool reserve(int task_id, int n_tokens) = 0;

  // Tells the cache that positions [0, tokens_so_far.size()) of the task now
  // hold the K/V of these token ids, so that its full pages can be shared by
  // later prompts that start with the same tokens (no-op for ContiguousCache
  // apart from checks). Throws std::invalid_argument for an unknown task, more
  // tokens than reserved, or fewer than committed before.
  virtual void commit(int task_id, std::span<const int> tokens_so_far) = 0;

  // A new task `child_id` whose positions [0, n_tokens) hold the K/V of the
  // parent's (the parent committed them): the n choices of one prompt
  // compute the prompt once. PageCache shares the parent's pages (a reference
  // each) and copies a shared page when one of them first writes into it
  // (copy-on-write, in reserve()); ContiguousCache copies the rows into a
  // free slot. Returns false, with no side effect, when there is no room now.
  // Throws std::invalid_argument when the child is admitted, the parent is
  // not, or n_tokens is outside [1, the parent's committed positions]
  // (ContiguousCache counts no commits: [1, max_seq_len] there).
  virtual bool fork(int parent_id, int child_id, int n_tokens) = 0;

  // The task finished, was cancelled or is preempted: its room is returned.
  // Throws std::invalid_argument for an unknown task.
  virtual void release(int task_id) = 0;

  virtual bool has_task(int task_id) const = 0;

  // What the forward pass writes and reads; `seq` is the task id.
  virtual KVCacheView& view() = 0;

  virtual KVCacheStats stats() const = 0;
  // Bytes of K/V storage (host memory, or device memory for a device cache);
  // 0: not reported (test stand-ins). `/stats` reports it.
  virtual size_t storage_bytes() const { return 0; }
  // Of storage_bytes(), those of the sliding layers' own pool (0: none).
  virtual size_t sliding_storage_bytes() const { return 0; }

  // KV cache events and the prefixes behind them (kv_events.h). A cache
  // without shared prefixes (ContiguousCache) has none: record_events(true)
  // answers false there, and a PagedKVCache true.
  virtual bool record_events(bool on) { return !on; }
  virtual std::vector<KVCacheEvent> take_events() { return {}; }
  virtual std::vector<KVCachedBlock> registered_blocks() const { return {}; }
  // Drops every cached prefix (vLLM's reset_prefix_cache); false, changing
  // nothing, while any task is admitted.
  virtual bool reset_prefix_cache() { return stats().tasks == 0; }

  int capacity_tokens() const {
    const KVCacheStats s = stats();
    return s.blocks_total * s.block_tokens;
  }
  // Tokens' worth of blocks that new tasks could get (free plus reclaimable cached blocks).
  int free_tokens() const {
    const KVCacheStats s = stats();
    return (s.blocks_free + s.blocks_cached) * s.block_tokens;
  }
  // Nothing is held by any task (cached prefixes are not leaks): the check after tests.
  bool all_free() const {
    const KVCacheStats s = stats();
    return s.tasks == 0 && s.blocks_held == 0;
  }
};

}  // namespace astrai
