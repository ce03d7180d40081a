// What the scheduler puts in each forward batch, seen through an executor that
// records every batch (recording_executor.h). Outputs alone cannot show these:
// the reference gives the same bits at any batch size, so a step that ran more
// rows than its budget, or recomputed a cached prefix, still gives the right
// tokens. Here the plans are asserted row by row.
#include <memory>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/engine/scheduler/engine_harness.h"
#include "tests/engine/scheduler/recording_executor.h"

namespace {

using namespace astrai;
using namespace astrai::test;

PlannedRequest greedy_request(std::vector<int> prompt, int max_tokens) {
  PlannedRequest r;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0.0f;
  r.ignore_eos = true;  // so that the number of decode steps is known
  return r;
}

// The rows of `batch` that belong to task `seq`.
std::vector<BatchToken> rows_of(const std::vector<BatchToken>& batch, int seq) {
  std::vector<BatchToken> rows;
  for (const auto& t : batch)
    if (t.seq == seq) rows.push_back(t);
  return rows;
}

struct Recorded {
  std::shared_ptr<BatchLog> log = std::make_shared<BatchLog>();
  std::unique_ptr<InferenceEngine> engine;
  Recorded(const EngineConfig& config) {
    const TinyModel& m = tiny_model();
    engine = std::make_unique<InferenceEngine>(std::make_unique<RecordingExecutor>(m.weights, log), m.tokenizer,
                                               config);
  }
};

}  // namespace

TEST_CASE("A long prompt is prefilled in chunks of the step budget, then decoded one row per step",
          "[engine][step_plan]") {
  std::mt19937 rng(1717);
  for (const EngineConfig& config : {contiguous_config(4, 8), paged_config(4, 8)}) {
    Recorded recorded(config);
    std::vector<PlannedRequest> requests = {greedy_request(random_prompt(rng, 37), 5)};
    compute_expected(requests);
    auto logs = run_requests(*recorded.engine, requests, Submission::Together);
    check_outputs(requests, logs);
    require_all_free(*recorded.engine);

    // 37 prompt positions in chunks of 8 (8, 8, 8, 8, 5), only the last
    // position sampling; then the 4 tokens after the first, one row a step.
    const auto batches = recorded.log->snapshot();
    const int seq = batches.at(0).at(0).seq;
    std::vector<std::vector<BatchToken>> expected;
    for (int from = 0; from < 37; from += 8) {
      std::vector<BatchToken> chunk;
      for (int pos = from; pos < std::min(from + 8, 37); ++pos)
        chunk.push_back({requests[0].prompt[size_t(pos)], seq, pos, pos == 36});
      expected.push_back(chunk);
    }
    for (int i = 0; i < 4; ++i) expected.push_back({{requests[0].expected[size_t(i)], seq, 37 + i, true}});
    REQUIRE(batches.size() == expected.size());
    for (size_t b = 0; b < batches.size(); ++b) {
      INFO("batch " << b);
      REQUIRE(batches[b].size() == expected[b].size());
      for (size_t r = 0; r < batches[b].size(); ++r) {
        CHECK(batches[b][r].token == expected[b][r].token);
        CHECK(batches[b][r].seq == expected[b][r].seq);
        CHECK(batches[b][r].pos == expected[b][r].pos);
        CHECK(batches[b][r].want_logits == expected[b][r].want_logits);
      }
    }
  }
}

TEST_CASE("A decoding task keeps its row every step; a new prompt's chunks fill the rest of the budget",
          "[engine][step_plan]") {
  std::mt19937 rng(1818);
  const EngineConfig config = paged_config(4, 8);
  Recorded recorded(config);
  std::vector<PlannedRequest> requests = {greedy_request(random_prompt(rng, 3), 20),
                                          greedy_request(random_prompt(rng, 30), 4)};
  // The first request's first token holds the loop still until the second
  // request is queued, so the steps that follow are known exactly.
  Gate gate;
  requests[0].on_token_hook = gate.callback();
  compute_expected(requests);
  auto first = submit_requests(*recorded.engine, {requests[0]}, Submission::Together);
  gate.wait_entered();
  auto second = submit_requests(*recorded.engine, {requests[1]}, Submission::Together);
  gate.open();
  std::vector<std::shared_ptr<RequestLog>> logs = {first[0], second[0]};
  finish_requests(*recorded.engine, requests, logs);
  check_outputs(requests, logs);
  require_all_free(*recorded.engine);

  const auto batches = recorded.log->snapshot();
  check_batches(batches, config.scheduler);
  const int a = batches.at(0).at(0).seq;
  // Batch 0 is the first prompt alone. Then every batch starts with the first
  // request's decode row, and the second prompt takes the 7 rows left, in
  // chunks of 7, 7, 7, 7, 2 at positions 0, 7, 14, 21, 28.
  REQUIRE(batches.size() >= 6);
  REQUIRE(rows_of(batches[0], a).size() == 3);
  for (size_t b = 1; b <= 5; ++b) {
    INFO("batch " << b);
    const auto& batch = batches[b];
    REQUIRE(batch.at(0).seq == a);
    CHECK(batch.at(0).pos == 2 + int(b));
    const int from = 7 * int(b - 1);
    const int count = std::min(7, 30 - from);
    REQUIRE(int(batch.size()) == 1 + count);
    for (int r = 0; r < count; ++r) {
      CHECK(batch[size_t(1 + r)].seq != a);
      CHECK(batch[size_t(1 + r)].pos == from + r);
    }
  }
}

TEST_CASE("A prefix-cache hit starts the prefill after the cached positions", "[engine][step_plan][prefix]") {
  std::mt19937 rng(1919);
  const EngineConfig config = paged_config(4, 64);  // 4-token pages
  Recorded recorded(config);
  const std::vector<int> shared = random_prompt(rng, 10);
  std::vector<int> second_prompt = shared;
  const auto tail = random_prompt(rng, 5);
  second_prompt.insert(second_prompt.end(), tail.begin(), tail.end());
  std::vector<PlannedRequest> first = {greedy_request(shared, 3)}, second = {greedy_request(second_prompt, 3)};
  compute_expected(first);
  compute_expected(second);
  auto first_logs = run_requests(*recorded.engine, first, Submission::Together);
  check_outputs(first, first_logs);
  const size_t batches_before = recorded.log->snapshot().size();
  auto second_logs = run_requests(*recorded.engine, second, Submission::Together);
  check_outputs(second, second_logs);
  const SchedulerStats stats = require_all_free(*recorded.engine);

  // The first prompt's two whole pages (8 positions) are cached; the second
  // request computes positions 8..14 only.
  const TaskOutput out = output_of(*second_logs[0]);
  CHECK(out.cached_prompt_tokens == 8);
  CHECK(stats.prefix_hit_tokens == 8);
  const auto batches = recorded.log->snapshot();
  REQUIRE(batches.size() > batches_before);
  const auto& prefill = batches[batches_before];
  REQUIRE(prefill.size() == 7);
  for (size_t r = 0; r < prefill.size(); ++r) CHECK(prefill[r].pos == 8 + int(r));
}

TEST_CASE("More requests than running places, one after another, all complete and leave the engine idle",
          "[engine][step_plan][lifecycle]") {
  std::mt19937 rng(2020);
  for (const EngineConfig& config : {contiguous_config(2, 8), paged_config(2, 8)}) {
    Recorded recorded(config);
    for (int i = 0; i < 3 * config.scheduler.max_running_tasks + 1; ++i) {
      INFO("request " << i);
      std::vector<PlannedRequest> one = {greedy_request(random_prompt(rng, 1 + i), 1 + i % 4)};
      compute_expected(one);
      auto logs = run_requests(*recorded.engine, one, Submission::Together);
      check_outputs(one, logs);
      // Right after the request ends, the loop is idle: a finished task left
      // in the running list shows here as active_tasks > 0, not as a hang.
      const SchedulerStats stats = require_all_free(*recorded.engine);
      CHECK(stats.total_tasks == uint64_t(i + 1));
    }
  }
}
