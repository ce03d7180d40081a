// The step policy (engine/scheduler/step_policy.h) driven directly, with no
// thread, no executor and no model: a fake KV cache that counts tokens, and
// sampled tokens written by the test. The threaded tests (test_step_plan.cpp,
// test_batching.cpp, test_choices.cpp) show the same rules through whole
// requests; here each rule is seen at the step it acts: the refill order,
// decode rows before prompt chunks within the budget, the preemption victim,
// and the generator of a choice that could not fork.
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "engine/scheduler/step_policy.h"

namespace {

using namespace astrai;

// Room for `capacity` tokens in all, one block a token: a task holds as many
// as it reserved. No prefix hits (admit gives 0). Forks can be refused.
class FakeCache final : public KVCache {
 public:
  explicit FakeCache(int capacity) : capacity_(capacity) {}
  bool refuse_forks = false;
  std::vector<int> released;  // task ids, in release order

  std::optional<int> admit(int id, std::span<const int> prompt) override {
    if (held_.count(id)) throw std::invalid_argument("admitted twice");
    if (used() + int(prompt.size()) > capacity_) return std::nullopt;
    held_[id] = int(prompt.size());
    return 0;
  }
  bool reserve(int id, int n) override {
    const int grow = std::max(0, n - held_.at(id));
    if (used() + grow > capacity_) return false;
    held_[id] += grow;
    return true;
  }
  void commit(int id, std::span<const int> tokens) override {
    if (int(tokens.size()) > held_.at(id)) throw std::invalid_argument("commit past the reservation");
  }
  bool fork(int parent, int child, int n) override {
    (void)held_.at(parent);
    if (refuse_forks || used() + n > capacity_) return false;
    held_[child] = n;
    return true;
  }
  void release(int id) override {
    if (!held_.erase(id)) throw std::invalid_argument("release of an unknown task");
    released.push_back(id);
  }
  bool has_task(int id) const override { return held_.count(id) > 0; }
  KVCacheView& view() override { throw std::logic_error("the policy never touches K/V"); }
  KVCacheStats stats() const override {
    return {1, capacity_, used(), 0, capacity_ - used(), int(held_.size())};
  }

 private:
  int used() const {
    int n = 0;
    for (const auto& [id, tokens] : held_) n += tokens;
    return n;
  }
  int capacity_;
  std::map<int, int> held_;
};

constexpr int kContext = 64;

SamplingParams seeded(uint64_t seed) {
  SamplingParams p;
  p.seed = seed;
  return p;
}

std::unique_ptr<Task> task(int id, int prompt_len, int max_tokens = 100, uint64_t seed = 1) {
  TokenRequest r;
  r.task_id = id;
  for (int i = 0; i < prompt_len; ++i) r.prompt.push_back(i + 1);
  r.max_tokens = max_tokens;
  r.sampling = seeded(seed);
  return std::make_unique<Task>(std::move(r));
}

// (task id, first position, count) of each planned task.
struct Rows {
  int id, start, count;
  bool operator==(const Rows&) const = default;
};
std::vector<Rows> rows_of(const StepPlan& plan) {
  std::vector<Rows> rows;
  for (const auto& p : plan.rows) rows.push_back({p.task->id, p.start, p.count});
  return rows;
}

// Token 7 for every draw of the plan.
std::vector<SampledToken> sevens(const StepPlan& plan) {
  return std::vector<SampledToken>(plan.sampling.size() + plan.fork_draws.size(), SampledToken{7, "", std::nullopt});
}

// Tasks 1, 2, ... with prompts of these lengths, queued in that order.
void enqueue_prompts(StepPolicy& policy, const std::vector<int>& prompt_lens) {
  for (size_t i = 0; i < prompt_lens.size(); ++i) policy.enqueue(task(int(i) + 1, prompt_lens[i]));
}

void step(StepPolicy& policy) {
  policy.refill();
  const StepPlan plan = policy.plan_step();
  policy.complete_step(plan, sevens(plan));
  policy.remove_finished();
}

}  // namespace

TEST_CASE("StepPolicy: oldest first while places last; decode rows before prompt chunks, within the budget",
          "[engine][step_policy]") {
  FakeCache cache(1000);
  StepPolicy policy(cache, {.max_running_tasks = 2, .max_tokens_per_step = 4}, kContext);
  enqueue_prompts(policy, {3, 5, 2});
  policy.refill();
  CHECK(policy.running() == 2);  // 1 and 2; 3 waits for a place
  CHECK(policy.waiting() == 1);

  StepPlan plan = policy.plan_step();
  // Budget 4: task 1's whole prompt (3), then one position of task 2's.
  CHECK(rows_of(plan) == std::vector<Rows>{{1, 0, 3}, {2, 0, 1}});
  REQUIRE(plan.sampling.size() == 1);  // only task 1's last position samples
  CHECK(plan.batch.size() == 4);
  CHECK(plan.batch.back().want_logits == false);
  policy.complete_step(plan, sevens(plan));

  // Task 1 now decodes: its one row comes first, then task 2's next chunk.
  plan = policy.plan_step();
  CHECK(rows_of(plan) == std::vector<Rows>{{1, 3, 1}, {2, 1, 3}});
  CHECK(plan.batch.front().token == 7);  // the token just accepted, at position 3
  policy.complete_step(plan, sevens(plan));
  CHECK(policy.counters().steps == 2);
  CHECK(policy.counters().prefill_tokens == 3 + 1 + 3);
  CHECK(policy.counters().total_tokens == 2);  // task 1's first and second
}

TEST_CASE("StepPolicy: out of cache room, the newest task not yet planned is preempted and comes back first",
          "[engine][step_policy]") {
  FakeCache cache(12);
  StepPolicy policy(cache, {.max_running_tasks = 3, .max_tokens_per_step = 16}, kContext);
  enqueue_prompts(policy, {3, 3, 3, 1});
  step(policy);  // 1, 2 and 3 admitted (9 of 12 tokens); 4 waits for a running place
  CHECK(policy.running() == 3);
  step(policy);  // each reserves its 4th position: 12 of 12
  CHECK(policy.counters().preemptions == 0);

  // Task 1 needs a 5th position: task 3, the newest (not task 2, the oldest
  // other), gives its room back; then task 2 fits too.
  policy.refill();
  const StepPlan plan = policy.plan_step();
  CHECK(rows_of(plan) == std::vector<Rows>{{1, 4, 1}, {2, 4, 1}});
  CHECK(policy.counters().preemptions == 1);
  CHECK(cache.released == std::vector<int>{3});
  CHECK(policy.task_ids() == std::vector<int>{3, 4, 1, 2});  // waiting (3 first in line, then 4), then running
  policy.complete_step(plan, sevens(plan));

  // Task 3 kept its tokens (3 prompt + 2 generated) and recomputes all of
  // them once readmitted: 10 held + 5 > 12, so not yet; task 4 behind it
  // would fit (1 token) but does not overtake it.
  policy.refill();
  CHECK(policy.running() == 2);
  CHECK(policy.waiting() == 2);
}

TEST_CASE("StepPolicy: a choice draws its first token from its first choice's row; one that cannot fork waits "
          "with its generator where it stood",
          "[engine][step_policy][choices]") {
  for (const bool refuse : {false, true}) {
    INFO("forks refused: " << refuse);
    FakeCache cache(1000);
    cache.refuse_forks = refuse;
    StepPolicy policy(cache, {.max_running_tasks = 4, .max_tokens_per_step = 16}, kContext);
    auto first = task(1, 5, 100, 11);
    first->forks.push_back(task(2, 5, 100, 22));
    first->forks.push_back(task(3, 5, 100, 33));
    std::vector<int> fork_tokens;
    first->forks[1]->on_token = [&](int token, const TokenLogprobs*) {
      fork_tokens.push_back(token);
      return false;
    };
    policy.enqueue(std::move(first));
    policy.refill();
    StepPlan plan = policy.plan_step();
    REQUIRE(plan.sampling.size() == 1);
    REQUIRE(plan.fork_draws.size() == 2);
    // Each choice draws from row 0 (the prompt's last position) the first
    // uniform of its own generator: that of a request alone with its seed.
    for (size_t j = 0; j < 2; ++j) {
      CHECK(plan.fork_draws[j].row == 0);
      CHECK(plan.fork_draws[j].sampling.uniform == SamplerState(seeded(22 + 11 * j)).next_uniform());
    }
    std::vector<SampledToken> tokens = {{5, "", std::nullopt}, {6, "", std::nullopt}, {8, "", std::nullopt}};
    policy.complete_step(plan, tokens);
    policy.remove_finished();
    if (!refuse) {
      CHECK(policy.running() == 3);
      CHECK(fork_tokens == std::vector<int>{8});
      CHECK(policy.counters().forked_prompt_tokens == 10);
      continue;
    }
    // Refused: both go back to waiting, untouched, and compute the prompt
    // themselves; the draw they make then is still their generator's first.
    CHECK(fork_tokens.empty());
    CHECK(policy.running() == 1);
    CHECK(policy.waiting() == 2);
    policy.refill();
    plan = policy.plan_step();
    REQUIRE(plan.sampling.size() == 3);  // task 1 decodes; 3 and 2 (pushed to the front in turn) prefill
    CHECK(rows_of(plan) == std::vector<Rows>{{1, 5, 1}, {3, 0, 5}, {2, 0, 5}});
    CHECK(plan.sampling[1].uniform == SamplerState(seeded(33)).next_uniform());
    CHECK(plan.sampling[2].uniform == SamplerState(seeded(22)).next_uniform());
  }
}

TEST_CASE("StepPolicy: a failed step ends its tasks and gives their room back", "[engine][step_policy]") {
  FakeCache cache(100);
  StepPolicy policy(cache, {.max_running_tasks = 2, .max_tokens_per_step = 8}, kContext);
  std::vector<FinishReason> reasons;
  auto t = task(1, 4);
  t->on_finish = [&](const TokenOutput& out) { reasons.push_back(out.reason); };
  policy.enqueue(std::move(t));
  policy.refill();
  policy.fail_step(policy.plan_step(), "forward pass failed: boom");
  policy.remove_finished();
  CHECK(reasons == std::vector<FinishReason>{FinishReason::Error});
  CHECK(policy.idle());
  CHECK(policy.finished() == 1);
  CHECK(cache.stats().tasks == 0);
}
