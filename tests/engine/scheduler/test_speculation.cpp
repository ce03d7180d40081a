// Speculative decoding through the engine (reference executor): whatever a
// proposer guesses, every request gets exactly the tokens the sequential
// reference loop gives it alone, with its finish reason and logprobs,
// batched beside plain requests, chunked, preempted, forked into n choices
// and constrained.
//
// Why exact equality holds: a speculative task feeds its last token and
// proposals d_1..d_k at their positions, and the reference executor
// computes each row from its token, position and earlier K/V alone, so row
// i (when d_1..d_i are the request's tokens) is the row the sequential loop
// computes for that position. Row i is sampled with the request's (i+1)-th
// next uniform and the penalties and grammar mask after d_1..d_i, which is
// what the loop samples it with; the first draw that differs from its
// proposal is the loop's next token, and the rows after it are dropped,
// their uniforms unused (the request's generator advances by the tokens
// kept). So the tokens are the loop's, in fewer steps when proposals are
// right. The proposers below: n-gram lookup (the real one), the reference's
// own continuation (every proposal kept), that continuation shifted by one
// id (none kept), and a mix of right tokens and one wrong one at a varying
// place (kept up to it).
#include <algorithm>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/engine/scheduler/engine_harness.h"
#include "tests/engine/scheduler/recording_executor.h"
#include "tests/engine/scheduler/reference_oracle.h"
#include "tests/engine/scheduler/speculation_oracle.h"
#include "tests/support/test_only_constraints.h"

// A namespace of its own, TEST_CASEs too: the program is a unity build.
namespace test_speculation {

using namespace astrai;
using namespace astrai::test;

EngineConfig speculating(EngineConfig config, Guess guess, std::shared_ptr<const Answers> answers) {
  config.scheduler.speculation = speculation(guess, std::move(answers), tiny_model().vocab());
  return config;
}

struct Run {
  SchedulerStats stats;
  std::vector<std::vector<BatchToken>> batches;
};

// The requests through an engine with this speculation: the reference's
// tokens for each, and batches of the allowed shape.
Run run_speculating(EngineConfig config, const std::vector<PlannedRequest>& requests, Submission how) {
  const TinyModel& m = tiny_model();
  auto batch_log = std::make_shared<BatchLog>();
  InferenceEngine engine(std::make_unique<RecordingExecutor>(m.weights, batch_log), m.tokenizer, config);
  auto logs = run_requests(engine, requests, how);
  check_outputs(requests, logs);
  Run run{require_all_free(engine), batch_log->snapshot()};
  check_batches(run.batches, config.scheduler);
  return run;
}

std::vector<EngineConfig> configs() {
  return {contiguous_config(4, 8), contiguous_config(2, 3), paged_config(4, 8), paged_config(16, 256)};
}

TEST_CASE("speculation: greedy, seeded, penalized and logprobs requests get their sequential tokens whatever "
          "is proposed",
          "[engine][speculative]") {
  std::mt19937 rng(4201);
  auto requests = random_requests(
      rng, 12, {.sampled_fraction = 0.5, .penalized_fraction = 0.7, .logprobs_fraction = 0.3});
  compute_expected(requests);
  const auto answers = answers_of(requests);
  for (const Guess guess : kGuesses)
    for (const EngineConfig& base : configs()) {
      INFO("proposer: " << guess_name(guess) << "; " << base.scheduler.max_running_tasks << " running, "
                        << base.scheduler.max_tokens_per_step << " tokens per step, "
                        << (base.cache == KVCacheKind::Paged ? "paged" : "contiguous"));
      const Run run = run_speculating(speculating(base, guess, answers), requests, Submission::Together);
      // The counters say what happened: right guesses are all kept (these
      // requests have no stop strings, so no proposal outlives its request),
      // wrong ones never, and every proposer proposed.
      CHECK(run.stats.spec_drafts > 0);
      CHECK(run.stats.spec_draft_tokens >= run.stats.spec_drafts);
      if (guess == Guess::Right) CHECK(run.stats.spec_accepted_tokens == run.stats.spec_draft_tokens);
      if (guess == Guess::Wrong) CHECK(run.stats.spec_accepted_tokens == 0);
      if (guess == Guess::Mixed || guess == Guess::Draft) {
        CHECK(run.stats.spec_accepted_tokens > 0);
        CHECK(run.stats.spec_accepted_tokens < run.stats.spec_draft_tokens);
      }
      uint64_t per_position = 0;
      for (const uint64_t n : run.stats.spec_accepted_per_position) per_position += n;
      CHECK(per_position == run.stats.spec_accepted_tokens);
    }
}

TEST_CASE("speculation: a draft model identical to the target keeps every guess of greedy requests",
          "[engine][speculative][draft]") {
  // The draft guesses the target's own argmax: at temperature 0 every guess
  // is the target's token (the reference scores a row the same in the
  // draft's single-row passes and the target's batches). Requests without
  // an end token or stop, so no guess outlives its request.
  std::mt19937 rng(4208);
  auto requests = random_requests(rng, 10, {.min_tokens = 8});
  for (auto& r : requests) r.ignore_eos = true;
  compute_expected(requests);
  for (EngineConfig config : configs()) {
    INFO(config.scheduler.max_running_tasks << " running, " << config.scheduler.max_tokens_per_step
                                            << " tokens per step");
    config.scheduler.speculation = draft_speculation(tiny_model().weights, 4, 8, 8);
    const Run run = run_speculating(config, requests, Submission::Together);
    CHECK(run.stats.spec_draft_tokens > 0);
    CHECK(run.stats.spec_accepted_tokens == run.stats.spec_draft_tokens);
  }
}

TEST_CASE("speculation: staggered requests with stop strings, stop ids and cancellations, beside requests that "
          "opt out",
          "[engine][speculative][cancel]") {
  std::mt19937 rng(4202);
  auto requests = random_requests(rng, 16, {.sampled_fraction = 0.5, .cancelled_fraction = 0.3, .stop_fraction = 0.4});
  for (size_t i = 0; i < requests.size(); i += 3) requests[i].max_proposed = 0;  // plain rows in the same batches
  for (size_t i = 1; i < requests.size(); i += 3) requests[i].max_proposed = 1;
  requests[2].stop_token_ids = {requests[2].prompt.back()};
  compute_expected(requests);
  const auto answers = answers_of(requests);
  for (const Guess guess : kGuesses)
    for (const EngineConfig& base : configs()) {
      INFO("proposer: " << guess_name(guess));
      const auto config = speculating(base, guess, answers);
      run_speculating(config, requests, Submission::Staggered);
      const Run together = run_speculating(config, requests, Submission::Together);
      // Opted-out requests never speculate and max_proposed 1 caps a run at
      // two sampled rows. The engine numbers tasks 1, 2, ... in submission
      // order, so request i is task i + 1.
      int free_runs_speculating = 0;
      for (const auto& batch : together.batches)
        for (size_t r = 0; r < batch.size(); ++r) {
          int wanted = 0;
          const size_t first = r;
          for (; r < batch.size() && batch[r].seq == batch[first].seq; ++r) wanted += batch[r].want_logits;
          --r;
          const int request = batch[first].seq - 1;
          if (request % 3 == 0) CHECK(wanted <= 1);
          if (request % 3 == 1) CHECK(wanted <= 2);
          if (request % 3 == 2 && wanted > 1) ++free_runs_speculating;
        }
      if (guess == Guess::Right) CHECK(free_runs_speculating > 0);
    }
}

TEST_CASE("speculation: a cache too small for every running request preempts; tokens unchanged",
          "[engine][speculative][preemption]") {
  std::mt19937 rng(4203);
  auto requests = random_requests(rng, 10, {.min_prompt = 10, .min_tokens = 30, .sampled_fraction = 0.5});
  compute_expected(requests);
  const auto answers = answers_of(requests);
  for (const Guess guess : kGuesses) {
    INFO("proposer: " << guess_name(guess));
    // 40 pages of 4 positions for 6 running requests of up to 100 positions each.
    const Run run = run_speculating(speculating(paged_config(6, 16, 40), guess, answers), requests, Submission::Together);
    CHECK(run.stats.preemptions > 0);
    CHECK(run.stats.spec_drafts > 0);
  }
}

TEST_CASE("speculation: n choices of a prompt fork, then speculate each with its own generator", 
          "[engine][speculative][choices]") {
  const TinyModel& m = tiny_model();
  std::mt19937 rng(4204);
  struct Choices {
    std::vector<int> prompt;
    int n;
    SamplingParams sampling;
    std::vector<std::vector<int>> expected;  // per choice: the reference alone with seed + i
  };
  std::vector<Choices> planned;
  auto answers = std::make_shared<Answers>();
  for (int k = 0; k < 5; ++k) {
    Choices c{random_prompt(rng, 1 + int(rng() % 20)), 1 + k % 3, {}, {}};
    c.sampling.temperature = k == 4 ? 0.0f : 1.0f;
    c.sampling.top_k = 0;
    c.sampling.seed = 700 + uint64_t(k);
    for (int i = 0; i < c.n; ++i) {
      SamplingParams s = c.sampling;
      s.seed = *s.seed + uint64_t(i);
      c.expected.push_back(reference_tokens(*m.weights, *m.tokenizer, c.prompt, 24, s));
      answers->push_back({c.prompt, c.expected.back()});
    }
    planned.push_back(std::move(c));
  }
  for (const Guess guess : kGuesses)
    for (const EngineConfig& base : {paged_config(8, 8, 24), paged_config(8, 64), contiguous_config(8, 8)}) {
      INFO("proposer: " << guess_name(guess) << ", pages " << base.cache_pages);
      InferenceEngine engine(m.weights, m.tokenizer, speculating(base, guess, answers));
      std::vector<ChoicesResult> results;
      for (const Choices& c : planned) {
        GenerationRequest request;
        request.prompt_ids = c.prompt;
        request.max_tokens = 24;
        request.sampling = c.sampling;
        request.n = c.n;
        results.push_back(engine.generate_choices(std::move(request)));
      }
      for (size_t k = 0; k < planned.size(); ++k)
        for (int i = 0; i < planned[k].n; ++i) {
          const auto out = results[k].choices[size_t(i)]->wait_for(kWaitTimeout);
          REQUIRE(out.has_value());
          INFO("request " << k << ", choice " << i << ": " << to_string(out->reason) << " " << out->error << " task " << out->task_id << " index " << out->index << " n " << out->tokens.size());
          CHECK(out->tokens == planned[k].expected[size_t(i)]);
        }
      const SchedulerStats stats = require_all_free(engine);
      CHECK(stats.spec_drafts > 0);
    }
}

TEST_CASE("speculation: a constrained request's proposals are checked against its grammar, and each row is "
          "sampled under the mask after the proposals before it",
          "[engine][speculative][constraint]") {
  const TinyModel& m = tiny_model();
  std::mt19937 rng(4205);
  const int max_tokens = 20;
  struct Planned {
    std::vector<int> prompt;
    SamplingParams sampling;
    bool parity = false;  // else free
    std::vector<int> expected;
    std::vector<TokenLogprobs> expected_logprobs;
  };
  std::vector<Planned> planned;
  auto answers = std::make_shared<Answers>();
  for (int i = 0; i < 8; ++i) {
    Planned p{random_prompt(rng, 1 + int(rng() % 12)), {}, i % 4 != 3, {}, {}};
    p.sampling.temperature = i % 3 == 0 ? 0.0f : 1.0f;
    p.sampling.top_k = 0;
    p.sampling.seed = 900 + uint64_t(i);
    if (p.parity)
      p.expected = compacted_reference_tokens(
          *m.weights, *m.tokenizer, p.prompt, max_tokens, p.sampling,
          [&](const std::vector<int>& generated) { return ParityConstraint::allowed(m.vocab(), generated.size()); },
          false, 2, &p.expected_logprobs);
    else
      p.expected = reference_tokens(*m.weights, *m.tokenizer, p.prompt, max_tokens, p.sampling, false, {}, 2,
                                    &p.expected_logprobs);
    answers->push_back({p.prompt, p.expected});
    planned.push_back(std::move(p));
  }
  for (const Guess guess : kGuesses)
    for (const EngineConfig& base : {paged_config(8, 64), contiguous_config(4, 6)}) {
      INFO("proposer: " << guess_name(guess));
      InferenceEngine engine(m.weights, m.tokenizer, speculating(base, guess, answers));
      std::vector<std::shared_ptr<GenerateResult>> results;
      for (const Planned& p : planned) {
        GenerationRequest g;
        g.prompt_ids = p.prompt;
        g.max_tokens = max_tokens;
        g.sampling = p.sampling;
        g.logprobs = 2;
        if (p.parity) g.constraint = compiled(ParityConstraint(m.vocab()));
        results.push_back(engine.generate_with_request(std::move(g)));
      }
      for (size_t i = 0; i < planned.size(); ++i) {
        const auto out = results[i]->wait_for(kWaitTimeout);
        REQUIRE(out.has_value());
        INFO("request " << i << (planned[i].parity ? " (parity)" : " (free)"));
        CHECK(out->tokens == planned[i].expected);
        REQUIRE(out->logprobs.size() == planned[i].expected_logprobs.size());  // the raw rows', mask or not
        for (size_t k = 0; k < out->logprobs.size(); ++k)
          CHECK(out->logprobs[k].logprob == planned[i].expected_logprobs[k].logprob);
      }
      const SchedulerStats stats = require_all_free(engine);
      if (guess == Guess::Right) CHECK(stats.spec_accepted_tokens == stats.spec_draft_tokens);
      if (guess != Guess::Wrong) CHECK(stats.spec_accepted_tokens > 0);
    }
}

}  // namespace test_speculation
