// Continuous batching never changes what a request gets: random requests run
// through the engine together, staggered, chunked, preempted or cancelled get
// exactly the tokens the sequential reference loop gives each of them alone.
#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/engine/scheduler/engine_harness.h"
#include "tests/engine/scheduler/recording_executor.h"

namespace {

using namespace astrai;
using namespace astrai::test;

struct NamedConfig {
  std::string name;
  EngineConfig config;
};

// Both caches; few running places so that requests queue; small step budgets
// so that prompts (up to 40 tokens) are prefilled in several chunks.
std::vector<NamedConfig> batching_configs() {
  return {
      {"contiguous, 4 running, 8 tokens per step", contiguous_config(4, 8)},
      {"contiguous, 2 running, 3 tokens per step", contiguous_config(2, 3)},
      {"paged (4-token pages), 4 running, 8 tokens per step", paged_config(4, 8)},
      {"paged (4-token pages), 16 running, 256 tokens per step", paged_config(16, 256)},
  };
}

// Runs the requests through an engine whose executor records every batch, and
// checks both what came out (the reference's tokens) and what the scheduler
// planned (the step budget and the shape of each batch).
void run_scenario(const NamedConfig& named, const std::vector<PlannedRequest>& requests, Submission how) {
  INFO("engine: " << named.name);
  const TinyModel& m = tiny_model();
  auto batch_log = std::make_shared<BatchLog>();
  InferenceEngine engine(std::make_unique<RecordingExecutor>(m.weights, batch_log), m.tokenizer, named.config);
  auto logs = run_requests(engine, requests, how);
  check_outputs(requests, logs);
  const SchedulerStats stats = require_all_free(engine);
  CHECK(stats.prefix_hit_tokens == cached_prompt_tokens_of(logs));
  check_batches(batch_log->snapshot(), named.config.scheduler);
}

}  // namespace

TEST_CASE("Greedy requests submitted together get exactly their sequential tokens", "[engine][batching]") {
  std::mt19937 rng(101);
  auto requests = random_requests(rng, 12, {});
  compute_expected(requests);
  for (const auto& named : batching_configs()) run_scenario(named, requests, Submission::Together);
}

TEST_CASE("Seeded sampled requests submitted together get their sequential tokens, token for token",
          "[engine][batching][sampling]") {
  std::mt19937 rng(202);
  auto requests = random_requests(rng, 12, {.sampled_fraction = 1.0});
  compute_expected(requests);
  for (const auto& named : batching_configs()) run_scenario(named, requests, Submission::Together);
}

TEST_CASE("Staggered submission with random cancellations: finished requests get their sequential tokens, "
          "cancelled ones a prefix of them",
          "[engine][batching][cancel]") {
  std::mt19937 rng(303);
  auto requests = random_requests(rng, 16, {.sampled_fraction = 0.5, .cancelled_fraction = 0.3, .stop_fraction = 0.4});
  requests[0].cancel_after = 0;  // at least one cancelled before it can start
  compute_expected(requests);
  for (const auto& named : batching_configs()) {
    run_scenario(named, requests, Submission::Staggered);
    run_scenario(named, requests, Submission::Together);
  }
}

TEST_CASE("A page cache too small for all running requests preempts them, and they still get their tokens",
          "[engine][batching][preemption]") {
  std::mt19937 rng(404);
  // 20 pages of 4 tokens: one whole context (16 pages) and a little more, for
  // 6 running requests of 10..30 prompt tokens growing by up to 50.
  auto requests = random_requests(rng, 12, {.min_prompt = 10, .max_prompt = 30, .min_tokens = 20,
                                            .max_tokens = 50, .sampled_fraction = 0.5, .cancelled_fraction = 0.2});
  compute_expected(requests);
  for (const Submission how : {Submission::Together, Submission::Staggered}) {
    const TinyModel& m = tiny_model();
    const EngineConfig config = paged_config(6, 16, 20);
    auto batch_log = std::make_shared<BatchLog>();
    InferenceEngine engine(std::make_unique<RecordingExecutor>(m.weights, batch_log), m.tokenizer, config);
    // Together: the loop is held inside the first token of a request that is
    // never cancelled until all twelve are queued, so that six run at once
    // and the 20 pages run out however fast or busy the machine is.
    // Staggered overlaps the requests by timing alone (on a loaded machine
    // they may run one after another), so it checks the outputs only.
    std::vector<PlannedRequest> planned = requests;
    Gate gate;
    const auto held = std::find_if(planned.begin(), planned.end(), [](const auto& r) { return r.cancel_after < 0; });
    REQUIRE(held != planned.end());
    if (how == Submission::Together) held->on_token_hook = gate.callback();
    auto logs = submit_requests(engine, planned, how);
    if (how == Submission::Together) {
      gate.wait_entered();
      gate.open();
    }
    finish_requests(engine, planned, logs);
    check_outputs(requests, logs);
    const SchedulerStats stats = require_all_free(engine);
    INFO("preemptions: " << stats.preemptions);
    if (how == Submission::Together) CHECK(stats.preemptions > 0);
    // A preempted task comes back onto its own cached pages: that is not a
    // prefix hit, and must not be counted as one.
    CHECK(stats.prefix_hit_tokens == cached_prompt_tokens_of(logs));
    // Nor is it a prefix-cache query again: each prompt is looked up at its
    // first admission only. Requests that made a token were admitted; one
    // cancelled before its first token may or may not have been.
    uint64_t admitted = 0, perhaps = 0;
    for (size_t i = 0; i < requests.size(); ++i)
      (logs[i]->tokens_seen > 0 ? admitted : perhaps) += requests[i].prompt.size();
    CHECK(stats.prefix_query_tokens >= admitted);
    CHECK(stats.prefix_query_tokens <= admitted + perhaps);
    check_batches(batch_log->snapshot(), config.scheduler);
  }
}

TEST_CASE("Paged and contiguous caches give identical outputs", "[engine][batching][kv_cache]") {
  std::mt19937 rng(505);
  auto requests = random_requests(rng, 10, {.sampled_fraction = 0.5});
  const TinyModel& m = tiny_model();
  std::vector<std::vector<TaskOutput>> outputs;
  for (const EngineConfig& config : {contiguous_config(3, 8), paged_config(3, 8), paged_config(5, 16, 18)}) {
    InferenceEngine engine(m.weights, m.tokenizer, config);
    auto logs = run_requests(engine, requests, Submission::Together);
    std::vector<TaskOutput> out;
    for (auto& log : logs) out.push_back(output_of(*log));
    outputs.push_back(std::move(out));
    require_all_free(engine);
  }
  for (size_t k = 1; k < outputs.size(); ++k)
    for (size_t i = 0; i < requests.size(); ++i) {
      INFO("configuration " << k << ", request " << i);
      CHECK(outputs[k][i].tokens == outputs[0][i].tokens);
      CHECK(outputs[k][i].text == outputs[0][i].text);
      CHECK(outputs[k][i].reason == outputs[0][i].reason);
    }
}
