#include "engine/scheduler/inference_scheduler.h"
#include "engine/scheduler/prompt_limit.h"

#include <algorithm>
#include <string>

namespace astrai {

void SchedulerConfig::validate() const {
  if (max_running_tasks < 1) throw std::invalid_argument("scheduler: max_running_tasks must be at least 1");
  if (max_tokens_per_step < max_running_tasks)
    throw std::invalid_argument("scheduler: max_tokens_per_step must be at least max_running_tasks, so that every "
                                "running task decodes in every step");
  if (max_waiting_tasks < 1) throw std::invalid_argument("scheduler: max_waiting_tasks must be at least 1");
}

InferenceScheduler::InferenceScheduler(std::unique_ptr<Executor> executor, std::unique_ptr<KVCache> cache,
                                       SchedulerConfig config)
    : executor_(std::move(executor)), cache_(std::move(cache)), config_(config) {
  config_.validate();
  if (!executor_ || !cache_) throw std::invalid_argument("scheduler: an executor and a cache are required");
  // A task alone must be able to reach the model's context, as the reference
  // loop does; a smaller cache would end it early (ContextLimit) with fewer
  // tokens than the reference gives, or fail to readmit it after preemption.
  const int context = executor_->config().max_seq_len;
  if (cache_->capacity_tokens() < context)
    throw std::invalid_argument("scheduler: the KV cache holds " + std::to_string(cache_->capacity_tokens()) +
                                " tokens, less than the model's context of " + std::to_string(context) +
                                " tokens (give it room for at least one whole context)");
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
}

void InferenceScheduler::submit(TokenRequest request) {
  validate(request);
  enqueue(std::make_unique<Task>(std::move(request)), 1);
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
  auto first = std::make_unique<Task>(std::move(choices.front()));
  for (size_t i = 1; i < choices.size(); ++i) first->forks.push_back(std::make_unique<Task>(std::move(choices[i])));
  enqueue(std::move(first), int(choices.size()));
}

// Queues a task (with its n_tasks - 1 forks): one place in the waiting queue.
void InferenceScheduler::enqueue(std::unique_ptr<Task> task, int n_tasks) {
  std::lock_guard lock(mutex_);
  if (!accepting_) throw std::runtime_error("the engine is shutting down");
  if (int(waiting_.size()) >= config_.max_waiting_tasks)
    throw QueueFullError("the waiting queue is full (" + std::to_string(config_.max_waiting_tasks) + " requests)");
  waiting_.push_back(std::move(task));
  stats_.total_tasks += uint64_t(n_tasks);
  unfinished_ += n_tasks;
  stats_.waiting_queue = int(waiting_.size());
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
  // unfinished_ reaches 0 inside a step, before the loop has removed the task
  // and published; waiting for the publication that follows the last finish
  // gives stats that describe the idle loop (and show a task it failed to remove).
  idle_.wait(lock, [&] { return unfinished_ == 0 && finished_published_ == finished_; });
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

// The loop: one iteration per forward step, in the four phases of the design.
void InferenceScheduler::run() {
  while (wait_for_work()) {
    cleanup();                          // 1. cancelled tasks end and give their cache room back
    refill();                           // 2. admit waiting tasks while places and cache room last
    const auto plan = plan_step();      // 3+4. decode rows and prefill chunks, planned as one batch;
    if (!plan.empty()) run_step(plan);  //      run, then each task whose last position was computed samples
    remove_finished();
    publish_stats();
  }
  publish_stats();
}

// Sleeps until there is work or shutdown; false once shutdown has nothing left to wait for.
bool InferenceScheduler::wait_for_work() {
  std::unique_lock lock(mutex_);
  wake_.wait(lock, [&] { return stopping_ || !waiting_.empty() || !running_.empty(); });
  if (stopping_ && std::chrono::steady_clock::now() >= cancel_deadline_) {
    // Past the grace period: everything left is cancelled.
    for (auto& t : waiting_) cancel_requests_.insert(t->id);
    for (auto& t : running_) cancel_requests_.insert(t->id);
  }
  return !(stopping_ && waiting_.empty() && running_.empty());
}

// Phase 1: cancelled tasks end, waiting or running.
void InferenceScheduler::cleanup() {
  std::vector<std::unique_ptr<Task>> cancelled_waiting;
  std::unordered_set<int> requests;
  {
    std::lock_guard lock(mutex_);
    requests.swap(cancel_requests_);
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (requests.count((*it)->id)) {
        cancelled_waiting.push_back(std::move(*it));
        it = waiting_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& t : cancelled_waiting) finish(*t, FinishReason::Cancelled);
  for (auto& t : running_)
    if (requests.count(t->id)) finish(*t, FinishReason::Cancelled);
  // Choices still waiting for their first choice's prompt: cancelled alone
  // (taken out under the lock, finished outside it: finish() takes it).
  std::vector<std::unique_ptr<Task>> cancelled_forks;
  auto take_cancelled_forks = [&](Task& first) {
    for (auto& fork : first.forks)
      if (requests.count(fork->id)) cancelled_forks.push_back(std::move(fork));
    std::erase(first.forks, nullptr);
  };
  for (auto& t : running_) take_cancelled_forks(*t);
  {
    std::lock_guard lock(mutex_);
    for (auto& t : waiting_) take_cancelled_forks(*t);
  }
  for (auto& t : cancelled_forks) finish(*t, FinishReason::Cancelled);
  remove_finished();
}

// Phase 2: admit waiting tasks, oldest first, while places and cache room last.
void InferenceScheduler::refill() {
  for (;;) {
    std::unique_ptr<Task> task;
    std::string error;
    {
      std::lock_guard lock(mutex_);
      // A task with forks is admitted with a running place for each of them.
      if (waiting_.empty() || places_taken() + 1 + int(waiting_.front()->forks.size()) > config_.max_running_tasks)
        return;
      Task& next = *waiting_.front();
      std::optional<int> hit;
      try {
        hit = cache_->admit(next.id, next.tokens);
        if (!hit && !running_.empty()) return;  // room comes back as running tasks end
        if (!hit)
          error = "the prompt of " + std::to_string(next.tokens.size()) + " tokens does not fit the KV cache (" +
                  std::to_string(cache_->capacity_tokens()) + " tokens)";
      } catch (const std::exception& e) {
        error = e.what();
      }
      task = std::move(waiting_.front());
      waiting_.pop_front();
      if (hit) {
        task->n_computed = *hit;
        if (!task->admitted_once) {
          task->cached_prompt_tokens = *hit;
          local_.prefix_hit_tokens += uint64_t(*hit);
          local_.prefix_query_tokens += uint64_t(task->tokens.size());
          task->admitted_once = true;
        }
      }
    }
    if (!error.empty()) {
      finish(*task, FinishReason::Error, error);
      continue;
    }
    running_.push_back(std::move(task));
  }
}

// Running places: the running tasks and the choices each will fork.
int InferenceScheduler::places_taken() const {
  int places = 0;
  for (const auto& t : running_) places += 1 + int(t->forks.size());
  return places;
}

// Makes cache room for every position `t` will have computed after this
// step, preempting the newest task not already in the plan (possibly t
// itself) until it fits. Returns false when t is not to run this step.
bool InferenceScheduler::make_room(Task& t, const std::vector<PlannedRows>& plan) {
  while (!cache_->reserve(t.id, int(t.tokens.size()))) {
    Task* victim = &t;
    for (auto it = running_.rbegin(); it != running_.rend(); ++it) {
      Task* c = it->get();
      const bool planned = std::any_of(plan.begin(), plan.end(), [&](const PlannedRows& p) { return p.task == c; });
      if (c != &t && !planned && !c->finished) {
        victim = c;
        break;
      }
    }
    if (victim == &t) {
      const bool alone = std::none_of(running_.begin(), running_.end(),
                                      [&](const auto& o) { return o.get() != &t && !o->finished; });
      if (alone)
        // Unreachable while the cache holds a whole context (checked at
        // construction); should a cache still refuse, ending the task beats
        // preempting and readmitting it forever.
        finish(t, FinishReason::ContextLimit);
      else
        preempt(t);
      return false;
    }
    preempt(*victim);
  }
  return true;
}

// Phases 3 and 4 planned as one batch: every decoding task gets its one row
// (long prompts never starve them), then prompts get chunks in admission
// order until the step's token budget is spent.
std::vector<InferenceScheduler::PlannedRows> InferenceScheduler::plan_step() {
  std::vector<PlannedRows> plan;
  int budget = config_.max_tokens_per_step;
  for (bool decoding : {true, false}) {
    for (size_t i = 0; i < running_.size() && budget > 0;) {
      Task& t = *running_[i];
      if (t.finished || (t.pending_positions() == 1) != decoding) {
        ++i;
        continue;
      }
      if (!make_room(t, plan)) {
        if (i < running_.size() && running_[i].get() == &t) ++i;  // finished in place; else it left running_
        continue;
      }
      const int count = std::min(t.pending_positions(), budget);
      plan.push_back({&t, t.n_computed, count});
      budget -= count;
      ++i;
    }
  }
  return plan;
}

// The step's forward pass and each finished task's next token. The uniform
// each wanted row draws comes from its own request's generator, in plan
// order, so the executor may sample wherever its logits are (the GPU) and a
// request still gets the tokens the reference loop would give it.
void InferenceScheduler::run_step(const std::vector<PlannedRows>& plan) {
  std::vector<BatchToken> batch;
  std::vector<RowSampling> sampling;
  bool forks_due = false;  // some task's prompt ends in this step and other choices fork from it
  for (const auto& p : plan) {
    const bool wants_token = p.start + p.count == int(p.task->tokens.size());
    for (int pos = p.start; pos < p.start + p.count; ++pos)
      batch.push_back({p.task->tokens[size_t(pos)], p.task->id, pos, pos + 1 == int(p.task->tokens.size())});
    if (wants_token)
      sampling.push_back({p.task->sampler.params(), p.task->sampler.next_uniform(), p.task->sampler.adjustments(),
                          p.task->logprobs});
    forks_due = forks_due || (wants_token && !p.task->forks.empty());
  }
  std::vector<SampledToken> tokens;
  xt::xtensor<float, 2> logits;  // kept only when forks sample from them too
  try {
    if (forks_due) {
      // The executor's contract: forward_and_sample's tokens are sample_rows
      // of forward's logits, so sampling here gives every task the same token.
      logits = executor_->forward(batch, cache_->view());
      tokens = sample_rows(logits, sampling);
    } else {
      tokens = executor_->forward_and_sample(batch, cache_->view(), sampling);
    }
  } catch (const std::exception& e) {
    for (const auto& p : plan) finish(*p.task, FinishReason::Error, std::string("forward pass failed: ") + e.what());
    return;
  }
  ++local_.steps;
  size_t next_token = 0;
  for (const auto& p : plan) {
    Task& t = *p.task;
    local_.prefill_tokens += uint64_t(std::max(0, std::min(p.start + p.count, t.prompt_len) - p.start));
    t.n_computed += p.count;
    cache_->commit(t.id, std::span<const int>(t.tokens.data(), size_t(t.n_computed)));
    if (t.n_computed != int(t.tokens.size())) continue;  // more prompt chunks to come
    const size_t row = next_token++;
    if (!t.forks.empty()) fork_choices(t, logits, row);  // before t may end and release the prompt
    const SampledToken& sampled = tokens[row];
    if (!sampled.error.empty())
      finish(t, FinishReason::Error, "sampling failed: " + sampled.error);
    else
      accept_token(t, sampled);
  }
}

// `first` has just computed its prompt, whose last logits are row `row` of
// `logits`. Each other choice takes the prompt's K/V from it and draws its
// first token from the same row with its own generator: the row a request
// submitted alone would compute (the same positions, tokens and earlier K/V,
// and the executor computes a row the same whatever its batch), so choice i
// gets the tokens of a request alone with its own seed.
void InferenceScheduler::fork_choices(Task& first, const xt::xtensor<float, 2>& logits, size_t row) {
  const size_t vocab = logits.shape(1);
  const std::span<const float> row_logits(logits.data() + row * vocab, vocab);
  std::vector<std::unique_ptr<Task>> forks = std::move(first.forks);
  first.forks.clear();
  for (auto& fork : forks) {
    Task& f = *fork;
    if (!cache_->fork(first.id, f.id, f.prompt_len)) {
      // No room to hold a copy now (ContiguousCache): it computes the prompt itself.
      std::lock_guard lock(mutex_);
      waiting_.push_front(std::move(fork));
      continue;
    }
    f.n_computed = f.prompt_len;
    f.admitted_once = true;  // its cached_prompt_tokens stay 0: the request's hit is counted on `first`
    local_.forked_prompt_tokens += uint64_t(f.prompt_len);
    const RowSampling sampling{f.sampler.params(), f.sampler.next_uniform(), f.sampler.adjustments(), f.logprobs};
    const SampledToken sampled = sample_rows(row_logits, vocab, std::span(&sampling, 1)).front();
    running_.push_back(std::move(fork));
    if (!sampled.error.empty())
      finish(f, FinishReason::Error, "sampling failed: " + sampled.error);
    else
      accept_token(f, sampled);
  }
}

// The consumer's hook runs on this thread: if it throws, only its own request
// ends (with FinishReason::Error), never the loop serving everyone.
void InferenceScheduler::accept_token(Task& t, const SampledToken& sampled) {
  const int token = sampled.token;
  t.tokens.push_back(token);
  t.sampler.record(token);  // for the penalties of the next token
  const TokenLogprobs* logprobs = nullptr;
  if (t.logprobs >= 0 && sampled.logprobs) logprobs = &t.token_logprobs.emplace_back(*sampled.logprobs);
  ++local_.total_tokens;
  bool stop_string = false;  // the consumer's verdict
  std::string error;
  if (t.on_token) {
    try {
      stop_string = t.on_token(token, logprobs);
    } catch (...) {
      error = callback_error("on_token", std::current_exception());
    }
  }
  const bool stop_token = std::find(t.stop_tokens.begin(), t.stop_tokens.end(), token) != t.stop_tokens.end();
  const int context = executor_->config().max_seq_len;
  if (!error.empty())
    finish(t, FinishReason::Error, error);
  else if (stop_token)
    finish(t, FinishReason::Eos);
  else if (stop_string)
    finish(t, FinishReason::StopSequence);
  else if (t.generated() >= t.max_new_tokens)
    finish(t, FinishReason::Length);
  else if (int(t.tokens.size()) - 1 >= context)  // the new token's position is past the context
    finish(t, FinishReason::ContextLimit);
}

void InferenceScheduler::preempt(Task& task) {
  cache_->release(task.id);
  task.n_computed = 0;
  ++local_.preemptions;
  std::unique_ptr<Task> owned;
  for (auto& t : running_)
    if (t.get() == &task) owned = std::move(t);
  running_.erase(std::remove(running_.begin(), running_.end(), nullptr), running_.end());
  std::lock_guard lock(mutex_);
  waiting_.push_front(std::move(owned));  // first in line to come back
}

void InferenceScheduler::finish(Task& task, FinishReason reason, std::string error) {
  if (task.finished) return;
  task.finished = true;
  // Choices not yet forked cannot go on without this one's prompt.
  for (auto& fork : task.forks) finish(*fork, reason, error);
  task.forks.clear();
  if (cache_->has_task(task.id)) cache_->release(task.id);
  if (task.on_finish) {
    const std::vector<int> generated(task.tokens.begin() + task.prompt_len, task.tokens.end());
    // Nothing is left to report a failure to (the output is final), but the
    // loop must go on.
    try {
      task.on_finish(TokenOutput{task.id, generated, reason, task.prompt_len, task.cached_prompt_tokens, error,
                                 std::move(task.token_logprobs)});
    } catch (...) {
    }
  }
  std::lock_guard lock(mutex_);
  --unfinished_;
  ++finished_;
}

void InferenceScheduler::remove_finished() {
  running_.erase(std::remove_if(running_.begin(), running_.end(), [](const auto& t) { return t->finished; }),
                 running_.end());
}

void InferenceScheduler::publish_stats() {
  std::lock_guard lock(mutex_);
  const uint64_t total_tasks = stats_.total_tasks, cancel_requests = stats_.cancel_requests;
  stats_ = local_;
  stats_.total_tasks = total_tasks;  // both counted by the callers' threads, not the loop
  stats_.cancel_requests = cancel_requests;
  stats_.active_tasks = int(running_.size());
  stats_.waiting_queue = int(waiting_.size());
  stats_.cache = cache_->stats();
  finished_published_ = finished_;
  idle_.notify_all();
}

}  // namespace astrai
