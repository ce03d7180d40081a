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
                                       std::shared_ptr<const Tokenizer> tokenizer, SchedulerConfig config)
    : executor_(std::move(executor)), cache_(std::move(cache)), tokenizer_(std::move(tokenizer)), config_(config) {
  config_.validate();
  if (!executor_ || !cache_ || !tokenizer_) throw std::invalid_argument("scheduler: executor, cache and tokenizer are required");
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

std::shared_ptr<GenerateResult> InferenceScheduler::submit(std::vector<int> prompt, GenerationRequest request) {
  const ModelConfig& model = executor_->config();
  if (prompt.empty()) throw std::invalid_argument("the prompt has no tokens");
  if (const auto too_long = prompt_too_long(prompt.size(), model.max_seq_len)) throw std::invalid_argument(*too_long);
  for (int id : prompt)
    if (id < 0 || id >= model.vocab_size)
      throw std::invalid_argument("prompt token id " + std::to_string(id) + " is outside the vocabulary");
  if (request.max_tokens < 1) throw std::invalid_argument("max_tokens must be at least 1");
  request.sampling.validate();
  std::vector<int> stop_tokens;
  if (!request.ignore_eos) stop_tokens = tokenizer_->end_of_generation_ids();
  std::lock_guard lock(mutex_);
  if (!accepting_) throw std::runtime_error("the engine is shutting down");
  if (int(waiting_.size()) >= config_.max_waiting_tasks)
    throw QueueFullError("the waiting queue is full (" + std::to_string(config_.max_waiting_tasks) + " requests)");
  auto task = std::make_unique<Task>(next_task_id_++, std::move(prompt), std::move(request), std::move(stop_tokens));
  auto result = task->result;
  waiting_.push_back(std::move(task));
  ++stats_.total_tasks;
  ++unfinished_;
  stats_.waiting_queue = int(waiting_.size());
  wake_.notify_all();
  return result;
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

void InferenceScheduler::run() {
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !waiting_.empty() || !running_.empty(); });
      if (stopping_ && std::chrono::steady_clock::now() >= cancel_deadline_) {
        // Past the grace period: everything left is cancelled.
        for (auto& t : waiting_) cancel_requests_.insert(t->id);
        for (auto& t : running_) cancel_requests_.insert(t->id);
      }
      if (stopping_ && waiting_.empty() && running_.empty()) break;
    }
    cleanup();
    refill();
    const auto plan = plan_step();
    if (!plan.empty()) run_step(plan);
    remove_finished();
    publish_stats();
  }
  publish_stats();
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
  remove_finished();
}

// Phase 2: admit waiting tasks, oldest first, while places and cache room last.
void InferenceScheduler::refill() {
  for (;;) {
    std::unique_ptr<Task> task;
    std::string error;
    {
      std::lock_guard lock(mutex_);
      if (waiting_.empty() || int(running_.size()) >= config_.max_running_tasks) return;
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

// Makes cache room for every position `t` will have computed after this
// step, preempting the newest task not already in the plan (possibly t
// itself) until it fits. Returns false when t is not to run this step.
bool InferenceScheduler::make_room(Task& t, const std::vector<PlannedRows>& plan) {
  while (!cache_->reserve(t.id, int(t.tokens.size()))) {
    Task* victim = &t;
    for (auto it = running_.rbegin(); it != running_.rend(); ++it) {
      Task* c = it->get();
      const bool planned = std::any_of(plan.begin(), plan.end(), [&](const PlannedRows& p) { return p.task == c; });
      if (c != &t && !planned && !c->result->done()) {
        victim = c;
        break;
      }
    }
    if (victim == &t) {
      const bool alone = std::none_of(running_.begin(), running_.end(),
                                      [&](const auto& o) { return o.get() != &t && !o->result->done(); });
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
      if (t.result->done() || (t.pending_positions() == 1) != decoding) {
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

void InferenceScheduler::run_step(const std::vector<PlannedRows>& plan) {
  std::vector<BatchToken> batch;
  for (const auto& p : plan)
    for (int pos = p.start; pos < p.start + p.count; ++pos)
      batch.push_back({p.task->tokens[size_t(pos)], p.task->id, pos, pos + 1 == int(p.task->tokens.size())});
  xt::xtensor<float, 2> logits;
  try {
    logits = executor_->forward(batch, cache_->view());
  } catch (const std::exception& e) {
    for (const auto& p : plan) finish(*p.task, FinishReason::Error, std::string("forward pass failed: ") + e.what());
    return;
  }
  ++local_.steps;
  size_t logits_row = 0;
  for (const auto& p : plan) {
    Task& t = *p.task;
    local_.prefill_tokens += uint64_t(std::max(0, std::min(p.start + p.count, t.prompt_len) - p.start));
    t.n_computed += p.count;
    cache_->commit(t.id, std::span<const int>(t.tokens.data(), size_t(t.n_computed)));
    if (t.n_computed != int(t.tokens.size())) continue;  // more prompt chunks to come
    const std::span<const float> row(logits.data() + logits_row++ * logits.shape(1), logits.shape(1));
    int token = 0;
    try {
      token = t.sampler.next(row);
    } catch (const std::exception& e) {
      finish(t, FinishReason::Error, std::string("sampling failed: ") + e.what());
      continue;
    }
    accept_token(t, token);
  }
}

void InferenceScheduler::accept_token(Task& t, int token) {
  t.tokens.push_back(token);
  ++local_.total_tokens;
  // A stop token is listed in the ids but is never text: EOS decodes to ""
  // anyway, but a user-defined <|im_end|> would otherwise show its spelling.
  const bool stop_token = std::find(t.stop_tokens.begin(), t.stop_tokens.end(), token) != t.stop_tokens.end();
  const std::string piece =
      stop_token ? std::string() : t.text.push(tokenizer_->decode_token(t.tokens[t.tokens.size() - 2], token));
  notify_token(t, TokenEvent{t.id, token, piece});
  t.result->push_piece(piece);
  const int context = executor_->config().max_seq_len;
  if (!t.callback_error.empty())
    finish(t, FinishReason::Error, t.callback_error);
  else if (stop_token)
    finish(t, FinishReason::Eos);
  else if (t.text.stopped())
    finish(t, FinishReason::StopSequence);
  else if (t.generated() >= t.max_new_tokens)
    finish(t, FinishReason::Length);
  else if (int(t.tokens.size()) - 1 >= context)  // the new token's position is past the context
    finish(t, FinishReason::ContextLimit);
}

// The caller's callback runs on this thread: if it throws, only its own
// request ends (with FinishReason::Error), never the loop serving everyone.
void InferenceScheduler::notify_token(Task& t, const TokenEvent& event) {
  if (!t.on_token) return;
  try {
    t.on_token(event);
  } catch (const std::exception& e) {
    t.callback_error = std::string("the on_token callback threw: ") + e.what();
  } catch (...) {
    t.callback_error = "the on_token callback threw a non-standard exception";
  }
  if (!t.callback_error.empty()) t.on_token = nullptr;  // not called again
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
  if (task.result->done()) return;
  if (cache_->has_task(task.id)) cache_->release(task.id);
  const std::string tail = task.text.finish();
  if (!tail.empty()) {
    notify_token(task, TokenEvent{task.id, -1, tail});
    task.result->push_piece(tail);
  }
  if (!task.callback_error.empty() && reason != FinishReason::Error) {
    reason = FinishReason::Error;
    error = task.callback_error;
  }
  TaskOutput out;
  out.task_id = task.id;
  out.text = task.text.text();
  out.tokens.assign(task.tokens.begin() + task.prompt_len, task.tokens.end());
  out.reason = reason;
  out.stop_sequence = task.text.matched_stop();
  out.prompt_tokens = task.prompt_len;
  out.cached_prompt_tokens = task.cached_prompt_tokens;
  out.error = error;
  if (task.on_finish) {
    // Nothing is left to report a failure to (the output is final), but the
    // result must still complete and the loop go on.
    try {
      task.on_finish(out);
    } catch (...) {
    }
  }
  task.result->finish(std::move(out));
  std::lock_guard lock(mutex_);
  --unfinished_;
  ++finished_;
}

void InferenceScheduler::remove_finished() {
  running_.erase(std::remove_if(running_.begin(), running_.end(), [](const auto& t) { return t->result->done(); }),
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
