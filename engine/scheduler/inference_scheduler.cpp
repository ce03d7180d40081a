#include "engine/scheduler/inference_scheduler.h"

#include "engine/scheduler/admission.h"
#include "engine/scheduler/prompt_limit.h"

#include <string>

namespace astrai {

namespace {

// The parts, checked before the policy is built on them.
KVCache& checked(const std::unique_ptr<Executor>& executor, const std::unique_ptr<KVCache>& cache,
                       const SchedulerConfig& config) {
  config.validate();
  if (!executor || !cache) throw std::invalid_argument("scheduler: an executor and a cache are required");
  // A task alone must be able to reach the model's context, as the reference
  // loop does; a smaller cache would end it early (ContextLimit) with fewer
  // tokens than the reference gives, or fail to readmit it after preemption.
  const int context = executor->config().max_seq_len;
  if (cache->capacity_tokens() < context)
    throw std::invalid_argument("scheduler: the KV cache holds " + std::to_string(cache->capacity_tokens()) +
                                " tokens, less than the model's context of " + std::to_string(context) +
                                " tokens (give it room for at least one whole context)");
  return *cache;
}

}  // namespace

namespace {
SchedulerConfig speculating_within_vocabulary(SchedulerConfig config, int vocab) {
  config.speculation = guesses_within_vocabulary(std::move(config.speculation), vocab);
  return config;
}
}  // namespace

InferenceScheduler::InferenceScheduler(std::unique_ptr<Executor> executor, std::unique_ptr<KVCache> cache,
                                       SchedulerConfig config)
    : executor_(std::move(executor)),
      cache_(std::move(cache)),
      config_(config),
      policy_(checked(executor_, cache_, config_),
              speculating_within_vocabulary(config_, executor_ ? executor_->config().vocab_size : 0),
              executor_ ? executor_->config().max_seq_len : 0) {
  stats_.cache = cache_->stats();
  thread_ = std::thread([this] { run(); });
}

InferenceScheduler::~InferenceScheduler() { shutdown(); }

void InferenceScheduler::validate(const TokenRequest& request) const {
  const ModelConfig& model = executor_->config();
  const std::vector<int>& prompt = request.prompt;
  if (prompt.empty()) throw std::invalid_argument("the prompt has no tokens");
  if (const auto too_long = prompt_too_long(prompt.size(), model.max_seq_len)) throw std::invalid_argument(*too_long);
  for (int id : prompt)
    if (id < 0 || id >= model.vocab_size)
      throw std::invalid_argument("prompt token id " + std::to_string(id) + " is outside the vocabulary");
  if (request.max_tokens < 1) throw std::invalid_argument("max_tokens must be at least 1");
  request.sampling.validate(model.vocab_size);
  for (int id : request.stop_tokens)
    if (id < 0 || id >= model.vocab_size)
      throw std::invalid_argument("stop token id " + std::to_string(id) + " is outside the vocabulary");
  if (request.logprobs > kMaxTopLogprobs)
    throw std::invalid_argument("top_logprobs must be at most " + std::to_string(kMaxTopLogprobs));
  if (request.max_proposed < -1)
    throw std::invalid_argument("the speculative proposals per step must be -1 (the server's setting) or at least 0");
}

void InferenceScheduler::submit(TokenRequest request) {
  validate(request);
  enqueue(started(std::move(request)), 1);
}

// The request's task, its constraint's first mask filled (which throws
// std::invalid_argument when the constraint allows no first token).
std::unique_ptr<Task> InferenceScheduler::started(TokenRequest request) const {
  auto task = std::make_unique<Task>(std::move(request));
  task->constraint.start(executor_->config().vocab_size);
  return task;
}

void InferenceScheduler::submit_choices(std::vector<TokenRequest> choices) {
  if (choices.empty()) throw std::invalid_argument("a request needs at least one choice");
  if (int(choices.size()) > config_.max_running_tasks)
    throw std::invalid_argument("n = " + std::to_string(choices.size()) + " choices run together and need " +
                                std::to_string(choices.size()) + " running places, but the engine runs at most " +
                                std::to_string(config_.max_running_tasks));
  for (const TokenRequest& choice : choices) {
    validate(choice);
    if (choice.prompt != choices.front().prompt)
      throw std::invalid_argument("the choices of one request must have the same prompt");
  }
  auto first = started(std::move(choices.front()));
  for (size_t i = 1; i < choices.size(); ++i) first->forks.push_back(started(std::move(choices[i])));
  enqueue(std::move(first), int(choices.size()));
}

// Queues a task (with its n_tasks - 1 forks): one place in the waiting queue.
void InferenceScheduler::enqueue(std::unique_ptr<Task> task, int n_tasks) {
  std::lock_guard lock(mutex_);
  if (!accepting_) throw std::runtime_error("the engine is shutting down");
  // The policy's queue and running places as the loop last counted them
  // (note_policy_queue): exact from a step's plan to its end (a choice that
  // cannot fork comes back to waiting inside the step and is counted at the
  // next plan). Then the tasks submitted since, in order, and this one.
  std::vector<int> queued = policy_waiting_places_;
  for (const auto& t : submitted_) queued.push_back(1 + int(t->forks.size()));
  if (!queue_has_room(config_.max_running_tasks - policy_places_taken_, queued, n_tasks, config_.max_waiting_tasks))
    throw QueueFullError("the waiting queue is full (" + std::to_string(config_.max_waiting_tasks) +
                         " requests wait for " + std::to_string(config_.max_running_tasks) + " running places)");
  const int waiting = int(submitted_.size()) + policy_waiting_;
  submitted_.push_back(std::move(task));
  stats_.total_tasks += uint64_t(n_tasks);
  stats_.waiting_queue = waiting + 1;
  wake_.notify_all();
}

void InferenceScheduler::cancel(int task_id) {
  std::lock_guard lock(mutex_);
  ++stats_.cancel_requests;
  cancel_requests_.insert(task_id);
  wake_.notify_all();
}

SchedulerStats InferenceScheduler::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

SchedulerStats InferenceScheduler::wait_until_idle() const {
  std::unique_lock lock(mutex_);
  // The last task finishes inside a step, before the loop has removed it and
  // published; waiting for the publication that counts the last finish gives
  // stats that describe the idle loop (and show a task it failed to remove).
  idle_.wait(lock, [&] { return finished_published_ == stats_.total_tasks; });
  return stats_;
}

bool InferenceScheduler::accepting() const {
  std::lock_guard lock(mutex_);
  return accepting_;
}

void InferenceScheduler::shutdown(std::chrono::milliseconds grace) {
  {
    std::lock_guard lock(mutex_);
    if (!accepting_ && !thread_.joinable()) return;
    accepting_ = false;
    stopping_ = true;
    cancel_deadline_ = std::chrono::steady_clock::now() + grace;
    wake_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void InferenceScheduler::with_cache(const std::function<void(KVCache&)>& job) {
  std::packaged_task<void()> task([&] { job(*cache_); });
  std::future<void> done = task.get_future();
  {
    std::lock_guard lock(mutex_);
    if (loop_done_) {
      task();  // no loop to race with; the lock keeps two late callers apart
    } else {
      jobs_.push_back(std::move(task));
      wake_.notify_all();
    }
  }
  done.get();
}

void InferenceScheduler::set_kv_event_sink(std::shared_ptr<KVEventSink> sink) {
  with_cache([&](KVCache& cache) {
    if (!cache.record_events(sink != nullptr))
      throw std::invalid_argument("KV cache events need a cache with shared prefixes (the paged cache), not this one");
    kv_event_sink_ = std::move(sink);
  });
}

// The loop: one iteration per forward step, in the four phases of the design.
void InferenceScheduler::run() {
  std::unordered_set<int> cancelled;
  std::deque<std::packaged_task<void()>> jobs;
  while (wait_for_work(cancelled, jobs)) {
    run_jobs(jobs);                       // 0. with_cache() callers, between two steps
    policy_.cancel(cancelled);            // 1. cancelled tasks end and give their cache room back
    policy_.refill();                     // 2. admit waiting tasks while places and cache room last
    const StepPlan plan = policy_.plan_step();  // 3+4. decode rows and prefill chunks, planned as one batch;
    count_waiting();                      //      (callers see the queue as admission and preemption left it)
    if (!plan.empty()) run_step(plan);    //      run, then each task whose last position was computed samples
    policy_.remove_finished();
    publish_events();                     // what the step did to the prefix cache, to the event sink
    publish_stats();
  }
  run_jobs(jobs);
  {
    std::lock_guard lock(mutex_);
    loop_done_ = true;  // from now on with_cache() runs jobs itself
    jobs.swap(jobs_);
  }
  run_jobs(jobs);
  publish_events();
  publish_stats();
}

void InferenceScheduler::run_jobs(std::deque<std::packaged_task<void()>>& jobs) {
  for (; !jobs.empty(); jobs.pop_front()) jobs.front()();  // a job's exception goes to its caller's future
}

// One batch per step, as vLLM publishes: the events the cache recorded since
// the last one, in order.
void InferenceScheduler::publish_events() {
  if (!kv_event_sink_) return;
  std::vector<KVCacheEvent> events = cache_->take_events();
  if (!events.empty()) kv_event_sink_->publish(std::move(events));
}

// Sleeps until there is work or shutdown, then hands the policy what callers
// queued: new tasks, and the ids to cancel (every task's once shutdown's grace
// is over). False once shutdown has nothing left to wait for.
bool InferenceScheduler::wait_for_work(std::unordered_set<int>& cancelled,
                                       std::deque<std::packaged_task<void()>>& jobs) {
  std::unique_lock lock(mutex_);
  wake_.wait(lock, [&] { return stopping_ || !submitted_.empty() || !jobs_.empty() || !policy_.idle(); });
  jobs.swap(jobs_);
  for (; !submitted_.empty(); submitted_.pop_front()) policy_.enqueue(std::move(submitted_.front()));
  note_policy_queue();
  cancelled.clear();
  cancelled.swap(cancel_requests_);
  if (stopping_ && std::chrono::steady_clock::now() >= cancel_deadline_)
    for (int id : policy_.task_ids()) cancelled.insert(id);  // past the grace period: everything left is cancelled
  return !(stopping_ && policy_.idle());
}

// The waiting queue's length for callers (QueueFullError, stats), once the
// policy has admitted and preempted for the step and before its hooks run.
void InferenceScheduler::count_waiting() {
  std::lock_guard lock(mutex_);
  note_policy_queue();
  stats_.waiting_queue = int(submitted_.size()) + policy_waiting_;
}

// The step's forward pass and the tokens it samples: one for each task whose
// last position is computed, and one for each choice that forks from it.
// What admission reads of the policy (under the lock): its queue and the
// running places taken.
void InferenceScheduler::note_policy_queue() {
  policy_waiting_ = policy_.waiting();
  policy_waiting_places_ = policy_.waiting_places();
  policy_places_taken_ = policy_.places_taken();
}

void InferenceScheduler::run_step(const StepPlan& plan) {
  std::vector<SampledToken> tokens;
  try {
    tokens = executor_->forward_and_sample_with_forks(plan.batch, cache_->view(), plan.sampling, plan.fork_draws);
  } catch (const std::exception& e) {
    policy_.fail_step(plan, std::string("forward pass failed: ") + e.what());
    return;
  }
  policy_.complete_step(plan, tokens);
}

void InferenceScheduler::publish_stats() {
  std::lock_guard lock(mutex_);
  const uint64_t total_tasks = stats_.total_tasks, cancel_requests = stats_.cancel_requests;
  stats_ = policy_.counters();
  stats_.total_tasks = total_tasks;  // both counted by the callers' threads, not the loop
  stats_.cancel_requests = cancel_requests;
  stats_.active_tasks = policy_.running();
  note_policy_queue();
  stats_.waiting_queue = int(submitted_.size()) + policy_waiting_;
  stats_.cache = cache_->stats();
  finished_published_ = policy_.finished();
  idle_.notify_all();
}

}  // namespace astrai
