#include "engine/scheduler/step_policy.h"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>

namespace astrai {

void SchedulerConfig::validate() const {
  if (max_running_tasks < 1) throw std::invalid_argument("scheduler: max_running_tasks must be at least 1");
  if (max_tokens_per_step < max_running_tasks)
    throw std::invalid_argument("scheduler: max_tokens_per_step must be at least max_running_tasks, so that every "
                                "running task decodes in every step");
  if (max_waiting_tasks < 1) throw std::invalid_argument("scheduler: max_waiting_tasks must be at least 1");
  if (speculation.num_tokens < 0) throw std::invalid_argument("scheduler: speculation.num_tokens must not be negative");
}

StepPolicy::StepPolicy(KVCache& cache, SchedulerConfig config, int context)
    : cache_(cache), config_(config), context_(context) {
  config_.validate();
}

void StepPolicy::enqueue(std::unique_ptr<Task> task) { waiting_.push_back(std::move(task)); }

std::vector<int> StepPolicy::task_ids() const {
  std::vector<int> ids;
  for (const auto& t : waiting_) ids.push_back(t->id);
  for (const auto& t : running_) ids.push_back(t->id);
  return ids;
}

// Phase 1: cancelled tasks end, waiting or running.
void StepPolicy::cancel(const std::unordered_set<int>& ids) {
  if (ids.empty()) return;
  std::vector<std::unique_ptr<Task>> cancelled_waiting;
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (ids.count((*it)->id)) {
      cancelled_waiting.push_back(std::move(*it));
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& t : cancelled_waiting) finish(*t, FinishReason::Cancelled);
  for (auto& t : running_)
    if (ids.count(t->id)) finish(*t, FinishReason::Cancelled);
  // Choices still waiting for their first choice's prompt: cancelled alone.
  std::vector<std::unique_ptr<Task>> cancelled_forks;
  auto take_cancelled_forks = [&](Task& first) {
    for (auto& fork : first.forks)
      if (ids.count(fork->id)) cancelled_forks.push_back(std::move(fork));
    std::erase(first.forks, nullptr);
  };
  for (auto& t : running_) take_cancelled_forks(*t);
  for (auto& t : waiting_) take_cancelled_forks(*t);
  for (auto& t : cancelled_forks) finish(*t, FinishReason::Cancelled);
  remove_finished();
}

// Phase 2: admit waiting tasks, oldest first, while places and cache room last.
void StepPolicy::refill() {
  for (;;) {
    // A task with forks is admitted with a running place for each of them.
    if (waiting_.empty() || places_taken() + 1 + int(waiting_.front()->forks.size()) > config_.max_running_tasks)
      return;
    Task& next = *waiting_.front();
    std::optional<int> hit;
    std::string error;
    try {
      hit = cache_.admit(next.id, next.tokens);
      if (!hit && !running_.empty()) return;  // room comes back as running tasks end
      if (!hit)
        error = "the prompt of " + std::to_string(next.tokens.size()) + " tokens does not fit the KV cache (" +
                std::to_string(cache_.capacity_tokens()) + " tokens)";
    } catch (const std::exception& e) {
      error = e.what();
    }
    std::unique_ptr<Task> task = std::move(waiting_.front());
    waiting_.pop_front();
    if (!error.empty()) {
      finish(*task, FinishReason::Error, error);
      continue;
    }
    task->n_computed = *hit;
    if (!task->admitted_once) {
      task->cached_prompt_tokens = *hit;
      counters_.prefix_hit_tokens += uint64_t(*hit);
      counters_.prefix_query_tokens += uint64_t(task->tokens.size());
      task->admitted_once = true;
    }
    running_.push_back(std::move(task));
  }
}

int StepPolicy::places_taken() const {
  int places = 0;
  for (const auto& t : running_) places += 1 + int(t->forks.size());
  return places;
}

std::vector<int> StepPolicy::waiting_places() const {
  std::vector<int> places;
  places.reserve(waiting_.size());
  for (const auto& t : waiting_) places.push_back(1 + int(t->forks.size()));
  return places;
}

// Makes cache room for every position `t` will have computed after this
// step, preempting the newest task not already planned (possibly t itself)
// until it fits. Returns false when t is not to run this step.
bool StepPolicy::make_room(Task& t, const std::vector<PlannedRows>& planned) {
  while (!cache_.reserve(t.id, int(t.tokens.size()))) {
    Task* victim = &t;
    for (auto it = running_.rbegin(); it != running_.rend(); ++it) {
      Task* c = it->get();
      const bool in_plan =
          std::any_of(planned.begin(), planned.end(), [&](const PlannedRows& p) { return p.task == c; });
      if (c != &t && !in_plan && !c->finished) {
        victim = c;
        break;
      }
    }
    if (victim == &t) {
      const bool alone = std::none_of(running_.begin(), running_.end(),
                                      [&](const auto& o) { return o.get() != &t && !o->finished; });
      if (alone)
        // Unreachable while the cache holds a whole context (the loop checks
        // at construction); should a cache still refuse, ending the task
        // beats preempting and readmitting it forever.
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
// (long prompts never starve them), then, with speculation, decoding tasks
// feed their proposals after it, then prompts get chunks in admission order
// until the step's token budget is spent. Each wanted row draws its uniform
// from its own request's generator, in plan order, so the executor may
// sample wherever its logits are and a request still gets the tokens the
// reference loop would give it.
StepPlan StepPolicy::plan_step() {
  StepPlan plan;
  int budget = config_.max_tokens_per_step;
  auto plan_tasks = [&](bool decoding) {
    for (size_t i = 0; i < running_.size() && budget > 0;) {
      Task& t = *running_[i];
      if (t.finished || (t.pending_positions() == 1) != decoding) {
        ++i;
        continue;
      }
      if (!make_room(t, plan.rows)) {
        if (i < running_.size() && running_[i].get() == &t) ++i;  // finished in place; else it left running_
        continue;
      }
      const int count = std::min(t.pending_positions(), budget);
      plan.rows.push_back({&t, t.n_computed, count});
      budget -= count;
      ++i;
    }
  };
  plan_tasks(true);
  std::vector<std::vector<std::vector<std::uint32_t>>> masks(plan.rows.size());  // per decode row, proposals_for's
  if (config_.speculation.enabled())
    for (size_t r = 0; r < plan.rows.size() && budget > 0; ++r) {
      PlannedRows& p = plan.rows[r];
      p.proposals = proposals_for(*p.task, budget, masks[r]);
      p.count += int(p.proposals.size());
      budget -= int(p.proposals.size());
    }
  plan_tasks(false);
  masks.resize(plan.rows.size());
  for (size_t r = 0; r < plan.rows.size(); ++r) {
    const PlannedRows& p = plan.rows[r];
    Task& t = *p.task;
    for (int pos = p.start; pos < p.start + p.count; ++pos) {
      const int token = pos < int(t.tokens.size()) ? t.tokens[size_t(pos)] : p.proposals[size_t(pos) - t.tokens.size()];
      plan.batch.push_back({token, t.id, pos, pos + 1 >= int(t.tokens.size())});
    }
    plan_sampling(plan, p, std::move(masks[r]));
  }
  plan_forks(plan);
  return plan;
}

// Up to `budget` tokens the proposer guesses for decoding task t, cut so
// that every one could be kept: no more than its request may still
// generate after the bonus token, no position past the context, and none
// its grammar refuses (nor any after a token that would end the request by
// its grammar). Their cache room is reserved, as many as free room holds:
// speculation never preempts.
std::vector<int> StepPolicy::proposals_for(Task& t, int budget, std::vector<std::vector<std::uint32_t>>& masks) {
  // A first choice whose other choices wait for its prompt (its last
  // position can be a decode row after a prefix hit): the choices draw from
  // that row alone, so it carries no proposals.
  if (!t.forks.empty()) return {};
  const int size = int(t.tokens.size());
  int most = std::min({config_.speculation.num_tokens, budget, t.max_new_tokens - t.generated() - 1, context_ - size});
  if (t.max_proposed >= 0) most = std::min(most, t.max_proposed);
  if (most <= 0) return {};
  std::vector<int> proposals;
  try {
    proposals = config_.speculation.propose(t.tokens, most);
  } catch (const std::exception&) {
    return {};  // a guess that failed is no guess: the request decodes as without speculation
  }
  if (int(proposals.size()) > most) proposals.resize(size_t(most));
  if (t.constraint.active()) {  // masks[i]: the mask after proposals[0, i], for row i + 1
    TaskConstraint ahead = t.constraint.fork();
    while (masks.size() < proposals.size() &&
           ahead.advance(proposals[masks.size()], t.stop_tokens) == TaskConstraint::Step::Continue)
      masks.emplace_back(ahead.mask().begin(), ahead.mask().end());
    proposals.resize(masks.size());
  }
  while (!proposals.empty() && !cache_.reserve(t.id, size + int(proposals.size()))) {  // as many as room holds
    proposals.pop_back();
    if (!masks.empty()) masks.pop_back();
  }
  if (proposals.empty()) masks.clear();
  return proposals;
}

// The wanted rows of `p`, in order: a task whose last position is computed
// draws its next token; a speculative task draws at every position, row i
// as the request's sampler would after proposals[0, i): its next uniforms
// in turn, and the penalties and grammar mask after those proposals. Those
// uniforms are drawn from a copy of its generator: complete_step() advances
// the task's own by the tokens it keeps.
void StepPolicy::plan_sampling(StepPlan& plan, const PlannedRows& p, std::vector<std::vector<std::uint32_t>> masks) {
  Task& t = *p.task;
  if (p.proposals.empty()) {
    if (p.wanted(t))
      plan.sampling.push_back(
          {t.sampler.params(), t.sampler.next_uniform(), t.sampler.adjustments(), t.logprobs, t.constraint.mask()});
    return;
  }
  SamplerState ahead = t.sampler;
  for (size_t i = 0; i <= p.proposals.size(); ++i) {
    std::span<const LogitAdjustment> adjustments = t.sampler.adjustments();
    std::span<const std::uint32_t> mask = t.constraint.mask();
    if (i > 0) {
      if (t.sampler.params().adjusts_logits())
        adjustments = plan.proposal_adjustments.emplace_back(ahead.adjustments().begin(), ahead.adjustments().end());
      if (t.constraint.active()) mask = plan.proposal_masks.emplace_back(std::move(masks[i - 1]));
    }
    plan.sampling.push_back({t.sampler.params(), ahead.next_uniform(), adjustments, t.logprobs, mask});
    if (i < p.proposals.size()) ahead.record(p.proposals[i]);
  }
}

// The choices whose first choice's prompt ends in this step draw their first
// token from its row: the row a request submitted alone would compute (the
// same positions, tokens and earlier K/V, and the executor computes a row the
// same whatever its batch), so choice i gets the tokens of a request alone
// with its own seed.
void StepPolicy::plan_forks(StepPlan& plan) {
  size_t row = 0;
  for (const PlannedRows& p : plan.rows) {
    const int wanted = p.wanted(*p.task);
    if (wanted == 1 && p.proposals.empty())
      for (auto& fork : p.task->forks) {
        Task& f = *fork;
        plan.forks.push_back({&f, f.sampler});
        plan.fork_draws.push_back({row,
                                   {f.sampler.params(), f.sampler.next_uniform(), f.sampler.adjustments(), f.logprobs,
                                    f.constraint.mask()}});
      }
    row += size_t(wanted);
  }
}

void StepPolicy::complete_step(const StepPlan& plan, std::span<const SampledToken> tokens) {
  if (tokens.size() != plan.sampling.size() + plan.fork_draws.size())
    throw std::logic_error("scheduler: " + std::to_string(tokens.size()) + " sampled tokens for " +
                           std::to_string(plan.sampling.size() + plan.fork_draws.size()) + " draws");
  ++counters_.steps;
  size_t next_token = 0;
  for (const auto& p : plan.rows) {
    Task& t = *p.task;
    counters_.prefill_tokens += uint64_t(std::max(0, std::min(p.start + p.count, t.prompt_len) - p.start));
    if (!p.proposals.empty()) {
      accept_verified(t, p, tokens.subspan(next_token, size_t(p.count)));
      next_token += size_t(p.count);
      continue;
    }
    t.n_computed += p.count;
    cache_.commit(t.id, std::span<const int>(t.tokens.data(), size_t(t.n_computed)));
    if (t.n_computed != int(t.tokens.size())) continue;  // more prompt chunks to come
    const SampledToken& sampled = tokens[next_token++];
    if (!t.forks.empty())  // before t may end and release the prompt
      fork_choices(t, plan, tokens.subspan(plan.sampling.size()));
    if (!sampled.error.empty())
      finish(t, FinishReason::Error, "sampling failed: " + sampled.error);
    else
      accept_token(t, sampled);
  }
}

// A speculative decode row came back: drawn[i] is what the request's sampler
// drew at row i. The proposals up to the first draw that differs are kept,
// and that draw (or, all kept, the last row's) follows them: the rule of
// verify_proposals() (reference/sampling/verify_proposals.h), accepted token
// by token so that a token that ends the request ends it there. With the
// proposer deterministic this is the min(1, p/q) rule with q one-hot, so the
// request gets the tokens it would get without speculation, token for token.
void StepPolicy::accept_verified(Task& t, const PlannedRows& p, std::span<const SampledToken> drawn) {
  const size_t k = p.proposals.size();
  size_t kept = 0;
  while (kept < k && drawn[kept].error.empty() && drawn[kept].token == p.proposals[kept]) ++kept;
  // The cache now holds the request's tokens at the last token's position
  // and the kept proposals'; the rows after them hold proposals it did not
  // take, which the next step overwrites (reserve() room is "at least").
  t.n_computed = p.start + 1 + int(kept);
  t.tokens.insert(t.tokens.end(), p.proposals.begin(), p.proposals.begin() + long(kept));
  cache_.commit(t.id, std::span<const int>(t.tokens.data(), size_t(t.n_computed)));
  t.tokens.resize(t.tokens.size() - kept);  // accept_token() appends them, one by one
  ++counters_.spec_drafts;
  counters_.spec_draft_tokens += k;
  if (counters_.spec_accepted_per_position.size() < k) counters_.spec_accepted_per_position.resize(k, 0);
  for (size_t i = 0; i <= kept && !t.finished; ++i) {
    t.sampler.next_uniform();  // the uniform row i drew (plan_sampling() drew it from a copy)
    if (!drawn[i].error.empty()) {
      finish(t, FinishReason::Error, "sampling failed: " + drawn[i].error);
      break;
    }
    if (i < kept) {
      ++counters_.spec_accepted_tokens;
      ++counters_.spec_accepted_per_position[i];
    }
    accept_token(t, drawn[i]);
  }
}

void StepPolicy::fail_step(const StepPlan& plan, const std::string& error) {
  for (const auto& p : plan.rows) finish(*p.task, FinishReason::Error, error);
}

// `first` has just computed its prompt: each other choice takes the prompt's
// K/V from it and the token the executor drew for it (plan.forks[j] got fork_tokens[j]).
void StepPolicy::fork_choices(Task& first, const StepPlan& plan, std::span<const SampledToken> fork_tokens) {
  std::vector<std::unique_ptr<Task>> forks = std::move(first.forks);
  first.forks.clear();
  for (auto& fork : forks) {
    Task& f = *fork;
    const auto planned = std::find_if(plan.forks.begin(), plan.forks.end(),
                                      [&](const PlannedFork& pf) { return pf.task == &f; });
    if (planned == plan.forks.end()) throw std::logic_error("scheduler: a choice forks without a planned draw");
    if (!cache_.fork(first.id, f.id, f.prompt_len)) {
      // No room to hold a copy now (ContiguousCache): it computes the prompt
      // itself later, drawing again from where its generator stood.
      f.sampler = planned->before_draw;
      waiting_.push_front(std::move(fork));
      continue;
    }
    f.n_computed = f.prompt_len;
    f.admitted_once = true;  // its cached_prompt_tokens stay 0: the request's hit is counted on `first`
    counters_.forked_prompt_tokens += uint64_t(f.prompt_len);
    const SampledToken& sampled = fork_tokens[size_t(planned - plan.forks.begin())];
    running_.push_back(std::move(fork));
    if (!sampled.error.empty())
      finish(f, FinishReason::Error, "sampling failed: " + sampled.error);
    else
      accept_token(f, sampled);
  }
}

// The consumer's hook runs here: if it throws, only its own request ends
// (with FinishReason::Error), never the loop serving everyone.
void StepPolicy::accept_token(Task& t, const SampledToken& sampled) {
  const int token = sampled.token;
  t.tokens.push_back(token);
  t.sampler.record(token);  // for the penalties of the next token
  const TokenLogprobs* logprobs = nullptr;
  if (t.logprobs >= 0 && sampled.logprobs) logprobs = &t.token_logprobs.emplace_back(*sampled.logprobs);
  ++counters_.total_tokens;
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
  // The constraint follows every token it may still matter for, and has the
  // next token's mask ready before the next plan (task_constraint.h).
  using Step = TaskConstraint::Step;
  const Step constrained = error.empty() && !stop_token && !stop_string ? t.constraint.advance(token, t.stop_tokens)
                                                                         : Step::Continue;
  if (!error.empty())
    finish(t, FinishReason::Error, error);
  else if (stop_token)
    finish(t, FinishReason::Eos);
  else if (stop_string)
    finish(t, FinishReason::StopSequence);
  else if (constrained == Step::Complete)
    finish(t, FinishReason::ConstraintComplete);
  else if (constrained == Step::DeadEnd)
    finish(t, FinishReason::Error,
           "the output constraint allows no next token after " + std::to_string(t.generated()) + " tokens");
  else if (constrained == Step::Rejected)
    finish(t, FinishReason::Error, "the output constraint refused the sampled token " + std::to_string(token));
  else if (t.generated() >= t.max_new_tokens)
    finish(t, FinishReason::Length);
  else if (int(t.tokens.size()) - 1 >= context_)  // the new token's position is past the context
    finish(t, FinishReason::ContextLimit);
}

// Preemption frees the task's room and keeps its tokens; it is first in line
// to come back, and recomputes them then.
void StepPolicy::preempt(Task& task) {
  cache_.release(task.id);
  task.n_computed = 0;
  ++counters_.preemptions;
  std::unique_ptr<Task> owned;
  for (auto& t : running_)
    if (t.get() == &task) owned = std::move(t);
  running_.erase(std::remove(running_.begin(), running_.end(), nullptr), running_.end());
  waiting_.push_front(std::move(owned));
}

void StepPolicy::finish(Task& task, FinishReason reason, std::string error) {
  if (task.finished) return;
  task.finished = true;
  // Choices not yet forked cannot go on without this one's prompt.
  for (auto& fork : task.forks) finish(*fork, reason, error);
  task.forks.clear();
  if (cache_.has_task(task.id)) cache_.release(task.id);
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
  ++finished_;
}

void StepPolicy::remove_finished() {
  running_.erase(std::remove_if(running_.begin(), running_.end(), [](const auto& t) { return t->finished; }),
                 running_.end());
}

}  // namespace astrai
