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
#include "reference/sampling/rng.h"

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

namespace {

// Speculation whose proposer always guesses token 9, as many as allowed.
SchedulerConfig speculating(int running, int per_step, int k = 4) {
  SchedulerConfig config{.max_running_tasks = running, .max_tokens_per_step = per_step};
  config.speculation = {[](std::span<const int>, int most) { return std::vector<int>(size_t(most), 9); }, k, "nines"};
  return config;
}

SampledToken drawn(int token) { return {token, "", std::nullopt}; }

}  // namespace

TEST_CASE("StepPolicy: a decode row feeds its proposals, every row samples, and the proposals up to the first "
          "differing draw are kept, then that draw",
          "[scheduler][policy][speculative]") {
  FakeCache cache(1000);
  StepPolicy policy(cache, speculating(2, 16), kContext);
  policy.enqueue(task(1, 3));
  step(policy);  // the prompt, then token 7: tokens 1 2 3 7
  policy.refill();
  const StepPlan plan = policy.plan_step();
  REQUIRE(rows_of(plan) == std::vector<Rows>{{1, 3, 5}});
  REQUIRE(plan.rows[0].proposals == std::vector<int>{9, 9, 9, 9});
  REQUIRE(plan.batch.size() == 5);
  for (size_t r = 0; r < 5; ++r) {
    CHECK(plan.batch[r].pos == 3 + int(r));
    CHECK(plan.batch[r].token == (r == 0 ? 7 : 9));
    CHECK(plan.batch[r].want_logits);
  }
  REQUIRE(plan.sampling.size() == 5);
  // Row i draws the request's (i+1)-th next uniform: seed 1's stream after the first token's.
  Rng rng(1);
  rng.next_uniform();
  for (size_t r = 0; r < 5; ++r) CHECK(plan.sampling[r].uniform == rng.next_uniform());
  // Draws 9 9 5: two proposals kept, then 5 (the last two rows' draws are dropped).
  policy.complete_step(plan, std::vector<SampledToken>{drawn(9), drawn(9), drawn(5), drawn(9), drawn(9)});
  const SchedulerStats& counters = policy.counters();
  CHECK(counters.total_tokens == 4);  // 7, then 9 9 5
  CHECK(counters.spec_drafts == 1);
  CHECK(counters.spec_draft_tokens == 4);
  CHECK(counters.spec_accepted_tokens == 2);
  CHECK(counters.spec_accepted_per_position == std::vector<uint64_t>{1, 1, 0, 0});
  // Positions 3 (7), 4 and 5 (the kept 9s) are computed; 6 holds the rejected
  // proposal's K/V and is fed again with the kept draw 5.
  const StepPlan next = policy.plan_step();
  REQUIRE(rows_of(next) == std::vector<Rows>{{1, 6, 5}});
  CHECK(next.batch[0].token == 5);
  // The generator advanced by the three tokens kept: the next row draws the
  // uniform the plan's fourth row drew.
  CHECK(next.sampling[0].uniform == plan.sampling[3].uniform);
}

TEST_CASE("StepPolicy: proposals are capped by the budget left after every decode row, by max_tokens, by the "
          "context and by the request's max_proposed, and take only free cache room",
          "[scheduler][policy][speculative]") {
  SECTION("the budget: decode rows first, then proposals in plan order, then prompts") {
    FakeCache cache(1000);
    StepPolicy policy(cache, speculating(3, 5), kContext);
    enqueue_prompts(policy, {2, 2});
    step(policy);  // both prompts (4 rows) in one step, both then decoding
    policy.enqueue(task(3, 4));
    policy.refill();
    const StepPlan plan = policy.plan_step();
    // 5 rows: two decode rows, then 3 proposals for task 1, none left for task 2 or the prompt.
    CHECK(rows_of(plan) == std::vector<Rows>{{1, 2, 4}, {2, 2, 1}});
  }
  SECTION("max_tokens: no more proposals than the request can still keep before its last token") {
    FakeCache cache(1000);
    StepPolicy policy(cache, speculating(2, 16), kContext);
    policy.enqueue(task(1, 3, /*max_tokens=*/3));
    step(policy);  // 1 generated; 2 to go: 1 proposal and the draw after it
    policy.refill();
    CHECK(rows_of(policy.plan_step()) == std::vector<Rows>{{1, 3, 2}});
  }
  SECTION("the context: no proposal at a position past it") {
    FakeCache cache(1000);
    StepPolicy policy(cache, speculating(2, 64), kContext);
    policy.enqueue(task(1, kContext - 3));
    step(policy);  // kContext - 2 tokens: positions up to kContext - 1 may be fed, so 2 proposals
    policy.refill();
    CHECK(rows_of(policy.plan_step()) == std::vector<Rows>{{1, kContext - 3, 3}});
  }
  SECTION("max_proposed: 0 opts out, 2 caps") {
    FakeCache cache(1000);
    StepPolicy policy(cache, speculating(2, 16), kContext);
    auto off = task(1, 2), two = task(2, 2);
    off->max_proposed = 0;
    two->max_proposed = 2;
    policy.enqueue(std::move(off));
    policy.enqueue(std::move(two));
    step(policy);
    policy.refill();
    CHECK(rows_of(policy.plan_step()) == std::vector<Rows>{{1, 2, 1}, {2, 2, 3}});
  }
  SECTION("cache room: as many proposals as free room holds; speculation never preempts") {
    FakeCache cache(7);
    StepPolicy policy(cache, speculating(2, 16), kContext);
    enqueue_prompts(policy, {2, 2});
    step(policy);  // both prompts, then a token each: 3 tokens a task
    policy.refill();
    const StepPlan plan = policy.plan_step();
    // The decode rows reserve 3 + 3 of the 7 tokens: one proposal fits, task
    // 1's; task 2 gets none, and nobody is preempted for them.
    CHECK(rows_of(plan) == std::vector<Rows>{{1, 2, 2}, {2, 2, 1}});
    CHECK(policy.counters().preemptions == 0);
  }
}
