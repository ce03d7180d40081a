// Continuous batching: a background thread that serves every submitted
// request through one executor and one KV cache. It deals in token ids and
// finish reasons only; what the tokens say (text, stop strings) is decided by
// the request's consumer behind its hooks (the engine's RequestDecoder).
//
// Two parts: the step policy (step_policy.h) decides, over tasks and the KV
// cache alone, what each forward batch holds (cleanup, refill, preemption,
// decode rows and prefill chunks planned as one batch); this loop owns the
// thread, the queues callers fill (submitted tasks, cancellations), the
// executor and the stats. Each iteration: take what callers queued, let the
// policy cancel, refill and plan, run the plan through
// Executor::forward_and_sample_with_forks (each task whose last position is
// computed gets its next token, drawn with a uniform from the task's own
// generator, on the GPU or on the host; the n choices of one prompt draw
// their first tokens from its row there too), hand the tokens back to the
// policy, and publish the stats.
//
// Batching never changes what a request gets: the executor computes every row
// with the same arithmetic whatever else is in the batch, chunked prefill
// equals prefill at once, and each request samples with its own RNG. When the
// cache runs out, the newest task is preempted (its room freed, its tokens
// kept) and later recomputed, which by the same argument changes nothing.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_set>
#include <vector>

#include "engine/executor/executor.h"
#include "engine/kv_cache/kv_cache.h"
#include "engine/scheduler/scheduler_config.h"
#include "engine/scheduler/step_policy.h"
#include "engine/scheduler/task.h"

namespace astrai {

class QueueFullError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class InferenceScheduler {
 public:
  // Throws std::invalid_argument for an invalid config, a missing part, or a
  // cache that cannot hold one whole context of the model.
  InferenceScheduler(std::unique_ptr<Executor> executor, std::unique_ptr<KVCache> cache, SchedulerConfig config = {});
  ~InferenceScheduler();  // shutdown(): cancels what is left
  InferenceScheduler(const InferenceScheduler&) = delete;
  InferenceScheduler& operator=(const InferenceScheduler&) = delete;

  // Queues a request; its hooks report what it generates. Throws
  // std::invalid_argument for an empty or too long prompt, a token id outside
  // the vocabulary or bad sampling parameters, QueueFullError when it would
  // make more than max_waiting_tasks wait (admission.h: requests that will
  // take a free running place do not), and std::runtime_error after shutdown (no
  // hook is ever called then).
  void submit(TokenRequest request);

  // Queues the n choices of one prompt as n tasks (their own ids, sampling
  // parameters and hooks; the same prompt). The prompt is computed once, by
  // choices[0]; when it is, the others fork its K/V (KVCache::fork: shared
  // pages with copy-on-write, or copied rows) and each samples its first
  // token from the same logits with its own generator, so choice i gets
  // exactly the tokens it would get submitted alone. A choice that cannot
  // fork (no free slot in a ContiguousCache) computes the prompt itself,
  // which gives the same tokens. The n choices are admitted together and need
  // n running places. All or nothing: throws as submit() does, and
  // std::invalid_argument when the list is empty, the prompts differ or
  // n > max_running_tasks, before anything is queued. A choice ended before
  // the prompt was computed (cancelled, failed) takes the choices not yet
  // forked with it, with the same reason.
  void submit_choices(std::vector<TokenRequest> choices);

  // Ends a waiting or running task with FinishReason::Cancelled; unknown or
  // finished ids are ignored.
  void cancel(int task_id);

  SchedulerStats stats() const;
  // Blocks until every submitted task has finished and the loop has published
  // its stats after the last one finished, then returns them. Those stats show
  // what is still held: no running or waiting task and no cache page, unless
  // the scheduler leaks (a finished task left running shows as active_tasks > 0
  // at once, rather than as a hang).
  SchedulerStats wait_until_idle() const;
  // False once shutdown() has begun: submit() then throws.
  bool accepting() const;

  // Stops accepting requests, lets running and waiting ones go on for up to
  // `grace`, cancels the rest, and joins the thread. Idempotent.
  void shutdown(std::chrono::milliseconds grace = std::chrono::milliseconds(0));

  // Runs job(cache) on the scheduler thread between two steps and waits for
  // it (the cache is not thread-safe); what it throws is thrown here. After
  // the loop has ended it runs on the calling thread. For inspection and
  // rare commands (KV events, the prefix cache reset), not per request.
  void with_cache(const std::function<void(KVCache&)>& job);
  // From now on the cache's events go to `sink` after every step that made
  // any (kv_events.h). Throws std::invalid_argument when the cache has none
  // to give (ContiguousCache); a null sink stops them.
  void set_kv_event_sink(std::shared_ptr<KVEventSink> sink);

  const ModelConfig& model_config() const { return executor_->config(); }
  const std::string executor_name() const { return executor_->name(); }
  size_t weights_bytes() const { return executor_->weights_bytes(); }
  size_t kv_cache_bytes() const { return cache_->storage_bytes(); }
  size_t kv_cache_sliding_bytes() const { return cache_->sliding_storage_bytes(); }
  std::string speculation_method() const {
    return config_.speculation.enabled() ? config_.speculation.method : "off";
  }

 private:
  void validate(const TokenRequest& request) const;
  std::unique_ptr<Task> started(TokenRequest request) const;
  void enqueue(std::unique_ptr<Task> task, int n_tasks);
  void run();
  bool wait_for_work(std::unordered_set<int>& cancelled, std::deque<std::packaged_task<void()>>& jobs);
  void count_waiting();
  void note_policy_queue();
  void run_step(const StepPlan& plan);
  void run_jobs(std::deque<std::packaged_task<void()>>& jobs);
  void publish_events();
  void publish_stats();

  std::unique_ptr<Executor> executor_;
  std::unique_ptr<KVCache> cache_;
  const SchedulerConfig config_;

  // Shared with callers, guarded by mutex_.
  mutable std::mutex mutex_;
  mutable std::condition_variable wake_;  // work arrived, or shutdown
  mutable std::condition_variable idle_;  // the loop published new stats
  std::deque<std::unique_ptr<Task>> submitted_;  // not yet handed to the policy
  std::unordered_set<int> cancel_requests_;
  std::deque<std::packaged_task<void()>> jobs_;  // with_cache()'s, for the loop to run
  bool loop_done_ = false;                        // the loop has ended: with_cache() runs jobs itself
  SchedulerStats stats_;
  bool accepting_ = true;
  bool stopping_ = false;
  std::chrono::steady_clock::time_point cancel_deadline_;
  int policy_waiting_ = 0;           // the policy's waiting tasks when the loop last looked (the queue's length)
  std::vector<int> policy_waiting_places_;  // and the places each needs, in order (admission.h)
  int policy_places_taken_ = 0;             // and the running places taken
  uint64_t finished_published_ = 0;  // tasks finished when stats_ was last published

  // Owned by the scheduler thread alone (its hooks run there).
  StepPolicy policy_;
  std::shared_ptr<KVEventSink> kv_event_sink_;

  std::thread thread_;
};

}  // namespace astrai
