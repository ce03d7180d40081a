// The scheduler's step policy: which tasks wait and which run, whom to
// preempt when the KV cache runs out, and what the next forward batch holds.
// Bookkeeping over tasks and the KV cache alone: no thread, no lock, no
// tensor, no executor. The loop (inference_scheduler.h) feeds it tasks and
// cancellations, runs each plan through the executor and hands back the
// sampled tokens; tests drive it directly (tests/engine/scheduler/test_step_policy.cpp).
//
// One step, in the four phases of docs/architecture.md:
//   1. cancel():         cancelled tasks end and give their cache room back;
//   2. refill():         waiting tasks are admitted, oldest first, while there
//                        are running places and cache room (a prefix-cache hit
//                        skips the prefill of cached pages);
//   3+4. plan_step():    one row for every decoding task, each at its own
//                        position, then (with speculation) the proposed
//                        tokens of decoding tasks after their row, then
//                        prompt chunks in admission order up to the step's
//                        token budget; room for them is reserved, preempting
//                        the newest task not yet planned when needed
//                        (proposals take only free room);
//   complete_step():     the executor's tokens are accepted (or fail_step()),
//                        a speculative task's up to the first draw that
//                        differs from its proposal.
// The tasks' hooks (on_token, on_finish) run inside these calls, on the
// caller's thread.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "engine/executor/row_sampling.h"
#include "engine/kv_cache/kv_cache.h"
#include "engine/scheduler/scheduler_config.h"
#include "engine/scheduler/task.h"
#include "reference/batch.h"

namespace astrai {

// Positions [start, start + count) of one task, computed in this step. A
// speculative decode row also feeds its proposals: count = 1 +
// proposals.size(), position start holds the task's last token and start + i
// proposals[i - 1], and every one of these positions is sampled (row i's draw
// verifies proposals[i]; the last row's is the bonus token).
struct PlannedRows {
  Task* task;
  int start;
  int count;
  std::vector<int> proposals = {};
  // The wanted rows (sampled tokens) these positions give.
  int wanted(const Task& t) const {
    if (!proposals.empty()) return count;
    return start + count == int(t.tokens.size()) ? 1 : 0;
  }
};

// A choice that forks from its first choice's prompt when that prompt ends
// in this step: its first token is drawn (ForkDraw) from the same row. Its
// generator's state before that draw is kept: when the cache has no room for
// the fork after all, the choice goes back to waiting as if it had not drawn.
struct PlannedFork {
  Task* task;
  SamplerState before_draw;
};

// One forward batch and what is to be sampled from it. Move-only: sampling
// views the speculative rows' adjustments and masks kept here.
struct StepPlan {
  std::vector<PlannedRows> rows;      // per task, in plan order
  std::vector<BatchToken> batch;      // rows' positions, in plan order
  // One per wanted row, in plan order: per task whose last position is
  // computed, and per position of a speculative decode row.
  std::vector<RowSampling> sampling;
  std::vector<ForkDraw> fork_draws;   // one per planned fork, drawn from the row of its first choice
  std::vector<PlannedFork> forks;     // forks[j] is fork_draws[j]'s choice
  // A speculative row i > 0 is sampled as if proposals[0, i) had been
  // generated: its penalties count them and its grammar mask follows them.
  // No task holds those yet, so the plan does (a deque never moves them).
  std::deque<std::vector<LogitAdjustment>> proposal_adjustments;
  std::deque<std::vector<std::uint32_t>> proposal_masks;

  StepPlan() = default;
  StepPlan(StepPlan&&) = default;
  StepPlan& operator=(StepPlan&&) = default;
  StepPlan(const StepPlan&) = delete;
  StepPlan& operator=(const StepPlan&) = delete;
  bool empty() const { return rows.empty(); }
};

class StepPolicy {
 public:
  // `context`: the model's max_seq_len (a task whose next position passes it
  // ends with ContextLimit). The cache must outlive the policy.
  StepPolicy(KVCache& cache, SchedulerConfig config, int context);

  // A submitted task (with the choices it will fork) at the back of the waiting queue.
  void enqueue(std::unique_ptr<Task> task);
  // Phase 1: the named tasks end with Cancelled, waiting or running; a choice
  // still waiting for its first choice's prompt ends alone.
  void cancel(const std::unordered_set<int>& ids);
  // Phase 2.
  void refill();
  // Phases 3 and 4: the next batch (empty when nothing can run).
  StepPlan plan_step();
  // The executor ran `plan`: tokens are forward_and_sample_with_forks' (the
  // sampled rows', then the forks').
  void complete_step(const StepPlan& plan, std::span<const SampledToken> tokens);
  // The executor failed on `plan`: its tasks end with Error.
  void fail_step(const StepPlan& plan, const std::string& error);
  // Finished tasks leave the running list (their cache room is already back).
  void remove_finished();

  // Every task waiting or running (shutdown cancels them after its grace).
  std::vector<int> task_ids() const;
  bool idle() const { return waiting_.empty() && running_.empty(); }
  int running() const { return int(running_.size()); }
  int waiting() const { return int(waiting_.size()); }
  // Running places: the running tasks and the choices each will fork.
  int places_taken() const;
  // The places each waiting task needs (1 + its forks), in the queue's order.
  std::vector<int> waiting_places() const;
  uint64_t finished() const { return finished_; }  // tasks ended since start, forks included
  // The loop's counters: total_tokens, steps, prefill, prefix and fork
  // tokens, preemptions (the rest of SchedulerStats is the loop's).
  const SchedulerStats& counters() const { return counters_; }

 private:
  bool make_room(Task& t, const std::vector<PlannedRows>& planned);
  std::vector<int> proposals_for(Task& t, int budget, std::vector<std::vector<std::uint32_t>>& masks);
  void plan_sampling(StepPlan& plan, const PlannedRows& rows, std::vector<std::vector<std::uint32_t>> masks);
  void plan_forks(StepPlan& plan);
  void accept_verified(Task& t, const PlannedRows& rows, std::span<const SampledToken> drawn);
  void fork_choices(Task& first, const StepPlan& plan, std::span<const SampledToken> fork_tokens);
  void accept_token(Task& task, const SampledToken& sampled);
  void preempt(Task& task);
  void finish(Task& task, FinishReason reason, std::string error = "");

  KVCache& cache_;
  const SchedulerConfig config_;
  const int context_;
  std::deque<std::unique_ptr<Task>> waiting_;   // preempted tasks and unforkable choices at the front
  std::vector<std::unique_ptr<Task>> running_;  // in admission order
  SchedulerStats counters_;
  uint64_t finished_ = 0;
};

}  // namespace astrai
