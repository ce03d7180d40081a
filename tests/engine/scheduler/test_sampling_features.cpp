// Penalties, logit bias, min_p, logprobs and stop_token_ids through the
// batching engine: every request gets what the sequential reference loop
// (SamplerState over the prompt and its own tokens) gives it alone.
#include <random>
#include <stdexcept>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/engine/scheduler/engine_harness.h"
#include "tests/engine/scheduler/recording_executor.h"
#include "tests/engine/scheduler/reference_oracle.h"

namespace {

using namespace astrai;
using namespace astrai::test;

void run_and_check(const EngineConfig& config, const std::vector<PlannedRequest>& requests, Submission how) {
  const TinyModel& m = tiny_model();
  auto batch_log = std::make_shared<BatchLog>();
  InferenceEngine engine(std::make_unique<RecordingExecutor>(m.weights, batch_log), m.tokenizer, config);
  auto logs = run_requests(engine, requests, how);
  check_outputs(requests, logs);
  require_all_free(engine);
  check_batches(batch_log->snapshot(), config.scheduler);
}

}  // namespace

TEST_CASE("Requests with penalties, bias, min_p and logprobs get the sequential loop's tokens and logprobs, "
          "batched, chunked, preempted or cancelled",
          "[engine][batching][penalties][logprobs]") {
  std::mt19937 rng(707);
  auto requests = random_requests(rng, 12, {.min_tokens = 10, .sampled_fraction = 0.5, .cancelled_fraction = 0.2,
                                            .penalized_fraction = 0.8, .logprobs_fraction = 0.6});
  compute_expected(requests);
  // The premise that makes the comparison bite: the penalties change what
  // most penalised requests get, so an engine that dropped them (or counted
  // the wrong tokens) would differ from the reference.
  int penalized = 0, changed = 0;
  const TinyModel& m = tiny_model();
  for (const auto& r : requests) {
    if (!r.sampling.adjusts_logits()) continue;
    ++penalized;
    SamplingParams plain = r.sampling;
    plain.presence_penalty = plain.frequency_penalty = 0.0f;
    plain.repetition_penalty = 1.0f;
    plain.logit_bias.clear();
    changed += reference_tokens(*m.weights, *m.tokenizer, r.prompt, r.max_tokens, plain, r.ignore_eos) != r.expected;
  }
  INFO(changed << " of " << penalized << " penalised requests changed by their penalties");
  REQUIRE(changed * 2 > penalized);
  run_and_check(contiguous_config(4, 8), requests, Submission::Together);
  run_and_check(paged_config(3, 5), requests, Submission::Staggered);
  run_and_check(paged_config(6, 16, 20), requests, Submission::Together);  // too few pages: preemption
}

TEST_CASE("stop_token_ids end a request at the first such token, with or without ignore_eos",
          "[engine][batching][stop]") {
  std::mt19937 rng(808);
  auto requests = random_requests(rng, 6, {.min_tokens = 8, .max_tokens = 20, .sampled_fraction = 0.5});
  compute_expected(requests);
  std::vector<size_t> stop_at;
  for (size_t i = 0; i < requests.size(); ++i) {
    PlannedRequest& r = requests[i];
    r.ignore_eos = i % 2 == 0;
    const size_t k = std::min<size_t>(3, r.expected.size() - 1);
    r.stop_token_ids = {r.expected[k], 2 + int(i)};  // the second id may or may not come first
    compute_expected(requests);
  }
  for (const auto& r : requests) {
    const auto first = std::find_first_of(r.expected.begin(), r.expected.end(), r.stop_token_ids.begin(),
                                          r.stop_token_ids.end());
    REQUIRE(first + 1 == r.expected.end());  // the reference loop ends at the first one
  }
  run_and_check(contiguous_config(4, 8), requests, Submission::Together);
}

TEST_CASE("Requests with a bias, stop token or logprobs outside the limits are refused", "[engine][lifecycle]") {
  const TinyModel& m = tiny_model();
  InferenceEngine engine(m.weights, m.tokenizer, contiguous_config(2, 8));
  GenerationRequest request;
  request.prompt_ids = std::vector<int>{1, 5, 6};
  request.sampling.logit_bias = {{m.vocab(), 1.0f}};
  CHECK_THROWS_AS(engine.generate_with_request(request), std::invalid_argument);
  request.sampling.logit_bias = {{m.vocab() - 1, -100.0f}};
  request.stop_token_ids = {m.vocab()};
  CHECK_THROWS_AS(engine.generate_with_request(request), std::invalid_argument);
  request.stop_token_ids = {};
  request.logprobs = kMaxTopLogprobs + 1;
  CHECK_THROWS_AS(engine.generate_with_request(request), std::invalid_argument);
  request.logprobs = kMaxTopLogprobs;
  request.max_tokens = 2;
  CHECK(engine.generate_with_request(request)->wait_for(kWaitTimeout).has_value());
}
