// What a scheduler is given (SchedulerConfig) and what it reports
// (SchedulerStats): shared by the step policy (step_policy.h), which keeps
// the counters, and the loop (inference_scheduler.h), which publishes them.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/kv_cache/kv_cache.h"
#include "engine/speculative/speculation_config.h"

namespace astrai {

struct SchedulerConfig {
  int max_running_tasks = 16;    // tasks decoding or prefilling at once
  int max_tokens_per_step = 256; // rows of one forward batch; longer prompts are prefilled in chunks
  int max_waiting_tasks = 1024;  // submit() beyond this throws QueueFullError
  // Off unless a proposer is set (docs/speculative-decoding.md). Proposals
  // take rows of the step's budget after every decoding task's own row and
  // before prompt chunks, and only cache room that is free: speculation
  // never preempts.
  SpeculationConfig speculation;
  void validate() const;
};

struct SchedulerStats {
  uint64_t total_tasks = 0;      // submitted since start
  uint64_t total_tokens = 0;     // generated since start
  int active_tasks = 0;          // running now
  int waiting_queue = 0;         // submitted, not yet admitted (or preempted)
  uint64_t steps = 0;            // forward batches run
  uint64_t prefill_tokens = 0;   // prompt positions computed
  uint64_t prefix_hit_tokens = 0;// prompt positions a prefix-cache hit saved
  uint64_t prefix_query_tokens = 0;  // prompt positions looked up in the cache (first admissions)
  uint64_t forked_prompt_tokens = 0;  // prompt positions choices took from their request's first choice (KVCache::fork)
  uint64_t preemptions = 0;
  uint64_t cancel_requests = 0;  // cancel() calls since start (counted at once, like total_tasks)
  // Speculation (vLLM's spec_decode counters): decode rows that carried
  // proposals, the proposals, and those kept; spec_accepted_per_position[i]
  // counts the drafts whose proposal i (from 0) was kept.
  uint64_t spec_drafts = 0;
  uint64_t spec_draft_tokens = 0;
  uint64_t spec_accepted_tokens = 0;
  std::vector<uint64_t> spec_accepted_per_position;
  KVCacheStats cache;            // at the end of the last step
};

}  // namespace astrai
