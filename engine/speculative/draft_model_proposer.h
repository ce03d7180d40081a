// A draft model as a proposer (vLLM's `draft_model` method, llama.cpp's
// --model-draft): a smaller model sharing the target's vocabulary guesses
// the next tokens greedily, on the same backend as the target, in the same
// process, with a KV cache of its own.
//
// Keeping the draft in step with the target. The draft is asked for a
// context (the prompt and every token the target chose so far) and holds,
// per sequence it has seen, the tokens whose K/V its cache holds. It never
// trusts the scheduler's bookkeeping: for each call it takes the sequence
// whose committed tokens are the longest prefix of the context, rolls back
// to the longest common prefix of what it wrote and the context (a rejected
// guess is simply overwritten), and feeds the rest. So preemption (the
// context comes back unchanged), forks (n choices share their prompt: a new
// sequence, whose prompt a paged cache shares as a prefix hit), prefix hits
// and aborts (a sequence no context extends any more is the first evicted
// when room is needed) need no hook: the draft's cache always holds the
// draft model's own K/V of a prefix of the context it is asked about.
//
// Cost: one forward pass over the tokens the draft has not seen, then one
// decode pass per further proposal, for each speculating request, each
// step (the passes are not batched across requests).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "engine/executor/executor.h"
#include "engine/kv_cache/kv_cache.h"

namespace astrai {

class DraftModelProposer {
 public:
  // `cache` must have been made for `executor` (its config, its backend).
  // `max_sequences`: the sequences kept at most (about the target's running
  // tasks); more are evicted, least recently used first.
  DraftModelProposer(std::unique_ptr<Executor> executor, std::unique_ptr<KVCache> cache, int max_sequences);

  // The draft model's greedy continuation of `context`, up to `most` tokens
  // (fewer near the end of the draft's context or when its cache has no
  // room). Throws what the executor throws; the sequence is then dropped.
  std::vector<int> propose(std::span<const int> context, int most);

  const ModelConfig& config() const { return executor_->config(); }
  struct Counts {
    long fed = 0;          // context tokens fed (not yet in the draft's cache)
    long reused = 0;       // context tokens found in the draft's cache
    long sequences = 0;    // sequences started
    long evictions = 0;    // sequences evicted for room
  };
  Counts counts() const { return counts_; }

 private:
  struct Sequence {
    int id = 0;
    std::vector<int> committed;  // context tokens whose K/V are committed: all but the last (a prefix of every later context)
    std::vector<int> written;    // committed, then the guesses written past them
  };
  std::list<Sequence>::iterator sequence_for(std::span<const int> context);
  bool make_room(const Sequence* keep);
  std::vector<int> draft(Sequence& s, std::span<const int> context, int most);

  std::unique_ptr<Executor> executor_;
  std::unique_ptr<KVCache> cache_;
  int max_sequences_;
  std::list<Sequence> sequences_;  // most recently used first
  int next_id_ = 0;
  Counts counts_;
};

}  // namespace astrai
