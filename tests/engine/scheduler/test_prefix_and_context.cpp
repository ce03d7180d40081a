// Prefix-cache hits and the context limit: a request whose prompt starts with
// pages another request computed skips their prefill yet gets the same output
// as without the hit, and a request running into the model's context ends
// with ContextLimit exactly where the reference loop does.
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/engine/scheduler/engine_harness.h"

namespace {

using namespace astrai;
using namespace astrai::test;

std::vector<int> concat(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

PlannedRequest planned(std::vector<int> prompt, int max_tokens, SamplingParams sampling) {
  PlannedRequest r;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.sampling = sampling;
  return r;
}

// Runs one request to its end, checks it against its reference, and returns its output.
TaskOutput run_one(InferenceEngine& engine, PlannedRequest request) {
  std::vector<PlannedRequest> one{std::move(request)};
  compute_expected(one);
  auto logs = run_requests(engine, one, Submission::Together);
  check_outputs(one, logs);
  return output_of(*logs[0]);
}

SamplingParams greedy() {
  SamplingParams s;
  s.temperature = 0.0f;
  return s;
}

SamplingParams seeded(uint64_t seed) {
  SamplingParams s;
  s.temperature = 1.0f;
  s.seed = seed;
  return s;
}

}  // namespace

TEST_CASE("A prefix-cache hit gives the same output as a miss", "[engine][prefix]") {
  const TinyModel& m = tiny_model();
  std::mt19937 rng(606);
  for (const SamplingParams& sampling : {greedy(), seeded(77)}) {
    INFO("temperature " << sampling.temperature);
    InferenceEngine engine(m.weights, m.tokenizer, paged_config(4, 8));
    const std::vector<int> a = random_prompt(rng, 20);
    const TaskOutput first = run_one(engine, planned(a, 10, sampling));
    CHECK(first.cached_prompt_tokens == 0);

    // 9 shared tokens: two whole 4-token pages hit, the third page differs.
    const std::vector<int> b = concat({a.begin(), a.begin() + 9}, random_prompt(rng, 7));
    const TaskOutput hit = run_one(engine, planned(b, 12, sampling));
    CHECK(hit.cached_prompt_tokens == 8);

    // The same prompt again: every whole page but the one holding the last token.
    CHECK(run_one(engine, planned(a, 10, sampling)).cached_prompt_tokens == 16);

    // The first request's prompt and output: pages holding generated tokens are shared too
    // (29 positions were computed, so 7 whole pages exist).
    const std::vector<int> continued = concat(a, first.tokens);
    REQUIRE(continued.size() == 30);
    CHECK(run_one(engine, planned(continued, 12, sampling)).cached_prompt_tokens == 28);

    const SchedulerStats stats = require_all_free(engine);
    CHECK(stats.prefix_hit_tokens == 8 + 16 + 28);
    CHECK(stats.prefix_query_tokens == 20 + 16 + 20 + 30);  // every prompt token, hit or not

    // The same request on a cold engine misses and gives the same output.
    InferenceEngine cold(m.weights, m.tokenizer, paged_config(4, 8));
    const TaskOutput miss = run_one(cold, planned(b, 12, sampling));
    CHECK(miss.cached_prompt_tokens == 0);
    CHECK(miss.tokens == hit.tokens);
    CHECK(miss.text == hit.text);
    require_all_free(cold);
  }
}

TEST_CASE("Requests sharing a long prefix hit it while running together and still get their tokens",
          "[engine][prefix]") {
  const TinyModel& m = tiny_model();
  std::mt19937 rng(707);
  const std::vector<int> prefix = random_prompt(rng, 18);  // 4 whole pages and 2 tokens
  std::vector<PlannedRequest> requests;
  for (int i = 0; i < 10; ++i)
    requests.push_back(planned(concat(prefix, random_prompt(rng, 1 + i % 5)), 20, i % 2 ? seeded(i) : greedy()));
  compute_expected(requests);
  for (const int pages : {0, 24}) {  // ample room, and so little that hits and preemption mix
    INFO("cache pages: " << pages);
    InferenceEngine engine(m.weights, m.tokenizer, paged_config(4, 8, pages));
    // The first request alone registers the prefix; the rest, submitted together, share it.
    std::vector<PlannedRequest> head(requests.begin(), requests.begin() + 1);
    auto first_logs = run_requests(engine, head, Submission::Together);
    check_outputs(head, first_logs);
    std::vector<PlannedRequest> rest(requests.begin() + 1, requests.end());
    auto logs = run_requests(engine, rest, Submission::Together);
    check_outputs(rest, logs);
    for (auto& log : logs) CHECK(output_of(*log).cached_prompt_tokens == 16);
    require_all_free(engine);
  }
}

TEST_CASE("A request reaching the context ends with ContextLimit and the reference's tokens",
          "[engine][context]") {
  const TinyModel& m = tiny_model();
  const int context = m.context();
  std::mt19937 rng(808);
  std::vector<PlannedRequest> requests;
  for (const int prompt_length : {context - 4, context, context - 1, 40, 1}) {
    PlannedRequest r = planned(random_prompt(rng, prompt_length), 1000, prompt_length % 2 ? seeded(5) : greedy());
    r.ignore_eos = true;  // nothing but the context may end it
    requests.push_back(std::move(r));
  }
  compute_expected(requests);
  // The reference feeds positions up to context - 1, so it returns context - prompt + 1 tokens.
  for (const auto& r : requests) CHECK(int(r.expected.size()) == context - int(r.prompt.size()) + 1);

  const int pages_per_context = context / 4;
  for (const EngineConfig& config :
       {contiguous_config(2, 8), paged_config(5, 64), paged_config(3, 16, pages_per_context + 2)}) {
    InferenceEngine engine(m.weights, m.tokenizer, config);
    auto logs = run_requests(engine, requests, Submission::Together);
    check_outputs(requests, logs);
    for (auto& log : logs) CHECK(output_of(*log).reason == FinishReason::ContextLimit);
    require_all_free(engine);
  }
}
