// n choices of one prompt (GenerationRequest::n, generate_choices): the
// prompt is computed once and its K/V forked, and choice i of a seeded
// request gets exactly the tokens the sequential reference loop gives the
// same prompt alone with seed + i.
//
// Why exact equality holds: the forks' first token is drawn from the logits
// row the first choice computed for the prompt's last position, which is the
// row a request alone computes (the reference executor computes a row from
// its token, position and earlier K/V only, whatever the batch; the prompt's
// K/V are the same floats whether computed by this task, chunked, or read
// from a shared or copied page, since a cache returns the rows it was given).
// Each choice then has its own SamplerState seeded with seed + i, drawing
// one uniform per token, so its draws are those of the reference alone.
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/engine/scheduler/engine_harness.h"
#include "tests/engine/scheduler/recording_executor.h"
#include "tests/engine/scheduler/reference_oracle.h"

// In a namespace of its own, TEST_CASEs too: the test program is a unity
// build (tests/meson.build), where other files have helpers of the same names.
namespace test_choices {

using namespace astrai;
using namespace astrai::test;

struct ChoicesRequest {
  std::vector<int> prompt;
  int n = 3;
  int max_tokens = 12;
  SamplingParams sampling;
};

SamplingParams seeded(uint64_t seed) {
  SamplingParams s;
  s.temperature = 1.0f;
  s.top_k = 0;  // the whole vocabulary: choices differ
  s.seed = seed;
  return s;
}

// The reference's tokens of choice i: the prompt alone with seed + i.
std::vector<int> expected_choice(const ChoicesRequest& r, int i) {
  const TinyModel& m = tiny_model();
  SamplingParams s = r.sampling;
  if (s.seed) s.seed = *s.seed + uint64_t(i);
  return reference_tokens(*m.weights, *m.tokenizer, r.prompt, r.max_tokens, s);
}

// Designated initializers name only what a request sets; the members they
// leave out (strings, lists, callbacks) are meant to be empty.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
GenerationRequest generation_request(const ChoicesRequest& r) {
  return {.prompt_ids = r.prompt, .max_tokens = r.max_tokens, .sampling = r.sampling, .n = r.n};
}
#pragma GCC diagnostic pop

// Submits a request whose first token holds the scheduler thread inside its
// callback until `gate` opens: requests submitted meanwhile wait unadmitted.
std::shared_ptr<GenerateResult> hold_the_loop(InferenceEngine& engine, Gate& gate, std::mt19937& rng) {
  GenerationRequest blocker;
  blocker.prompt_ids = random_prompt(rng, 5);
  blocker.max_tokens = 2;
  blocker.on_token = gate.callback();
  auto blocked = engine.generate_with_request(std::move(blocker));
  gate.wait_entered();
  return blocked;
}

SamplingParams greedy() {
  SamplingParams s;
  s.temperature = 0.0f;
  return s;
}

// Every choice's tokens, reason and index equal the reference's, and the
// events each choice's callback saw carry its index.
void check_choices(const ChoicesRequest& r, const std::vector<TaskOutput>& outputs) {
  const TinyModel& m = tiny_model();
  REQUIRE(int(outputs.size()) == r.n);
  for (int i = 0; i < r.n; ++i) {
    INFO("choice " << i << " of " << r.n << ", prompt of " << r.prompt.size() << " tokens");
    const std::vector<int> expected = expected_choice(r, i);
    CHECK(outputs[size_t(i)].index == i);
    CHECK(outputs[size_t(i)].tokens == expected);
    CHECK(outputs[size_t(i)].reason == reference_reason(*m.tokenizer, expected, r.max_tokens));
    CHECK(outputs[size_t(i)].prompt_tokens == int(r.prompt.size()));
  }
}

std::vector<TaskOutput> wait_all(const ChoicesResult& result) {
  auto outputs = result.wait_for(kWaitTimeout);
  REQUIRE(outputs.has_value());
  return *outputs;
}


TEST_CASE("choice i of a seeded n-request gets the reference's tokens with seed + i, prompts around page boundaries",
          "[engine][choices]") {
  const TinyModel& m = tiny_model();
  std::mt19937 rng(1717);
  // The premise that makes the comparison bite: the choices differ, so a
  // fork that reused another choice's generator, its cache rows or seed + 0
  // would give some choice the wrong tokens.
  const ChoicesRequest probe{random_prompt(rng, 9), 3, 12, seeded(5)};
  REQUIRE(expected_choice(probe, 0) != expected_choice(probe, 1));
  REQUIRE(expected_choice(probe, 1) != expected_choice(probe, 2));

  for (const EngineConfig& config : {paged_config(8, 64), paged_config(4, 5), contiguous_config(8, 64)}) {
    InferenceEngine engine(m.weights, m.tokenizer, config);
    // 4-token pages: prompts ending just before, on and after a page boundary.
    std::vector<ChoicesRequest> requests;
    for (int len : {3, 4, 5, 7, 8, 9}) requests.push_back({random_prompt(rng, len), 1 + len % 4, 10, seeded(40 + len)});
    requests.push_back({random_prompt(rng, 9), 3, 10, greedy()});  // greedy: all equal
    requests.push_back({random_prompt(rng, 6), 4, 1, seeded(3)});   // every choice ends with its first token
    std::vector<ChoicesResult> results;
    for (const auto& r : requests) results.push_back(engine.generate_choices(generation_request(r)));
    for (size_t k = 0; k < requests.size(); ++k) check_choices(requests[k], wait_all(results[k]));
    require_all_free(engine);
  }
}

TEST_CASE("a choice equals a single request submitted with its seed, logprobs and penalties included",
          "[engine][choices][logprobs]") {
  const TinyModel& m = tiny_model();
  std::mt19937 rng(23);
  InferenceEngine engine(m.weights, m.tokenizer, paged_config(8, 16));
  ChoicesRequest r{random_prompt(rng, 11), 4, 14, seeded(1000)};
  r.sampling.presence_penalty = 0.5f;  // counts the choice's own tokens: each fork its own
  GenerationRequest g = generation_request(r);
  g.logprobs = 2;
  const ChoicesResult choices = engine.generate_choices(g);
  std::vector<std::shared_ptr<GenerateResult>> singles;
  for (int i = 0; i < r.n; ++i) {
    GenerationRequest single = g;
    single.n = 1;
    single.sampling.seed = 1000 + uint64_t(i);
    singles.push_back(engine.generate_with_request(single));
  }
  const std::vector<TaskOutput> outputs = wait_all(choices);
  for (int i = 0; i < r.n; ++i) {
    auto single = singles[size_t(i)]->wait_for(kWaitTimeout);
    REQUIRE(single);
    CHECK(outputs[size_t(i)].tokens == single->tokens);
    CHECK(outputs[size_t(i)].text == single->text);
    // The same logits rows (see the top of the file) give the same float64 log-softmax.
    REQUIRE(outputs[size_t(i)].logprobs.size() == single->logprobs.size());
    for (size_t k = 0; k < single->logprobs.size(); ++k) {
      CHECK(outputs[size_t(i)].logprobs[k].logprob == single->logprobs[k].logprob);
      REQUIRE(outputs[size_t(i)].logprobs[k].top.size() == 2);
      for (size_t j = 0; j < 2; ++j) {
        CHECK(outputs[size_t(i)].logprobs[k].top[j].token == single->logprobs[k].top[j].token);
        CHECK(outputs[size_t(i)].logprobs[k].top[j].logprob == single->logprobs[k].top[j].logprob);
      }
    }
  }
  require_all_free(engine);
}

TEST_CASE("the prompt of an n-request is computed once and its pages held once", "[engine][choices][stats]") {
  const TinyModel& m = tiny_model();
  std::mt19937 rng(5);
  const ChoicesRequest r{random_prompt(rng, 10), 4, 6, seeded(77)};  // 10 tokens: pages of 4, 4 and 2
  for (const bool paged : {true, false}) {
    INFO((paged ? "paged" : "contiguous"));
    InferenceEngine engine(m.weights, m.tokenizer, paged ? paged_config(4, 64) : contiguous_config(4, 64));
    // Hold the loop inside choice 0's second token: every choice has forked
    // and the stats published after the first step describe the fork alone
    // (the step that copies the partial page is the one being held).
    Gate gate;
    GenerationRequest g = generation_request(r);
    std::atomic<int> first_choice_tokens = 0;
    g.on_token = [&, hold = gate.callback()](const TokenEvent& e) {
      if (e.index == 0 && e.token >= 0 && ++first_choice_tokens == 2) hold(e);
    };
    const ChoicesResult result = engine.generate_choices(g);
    gate.wait_entered();
    const SchedulerStats forked = engine.get_stats();
    gate.open();
    check_choices(r, wait_all(result));
    CHECK(forked.active_tasks == 4);
    // Paged: the prompt's 3 pages, once (4 requests alone would hold 12);
    // contiguous: a slot per choice, the rows copied, not computed.
    CHECK(forked.cache.blocks_held == (paged ? 3 : 4));
    const SchedulerStats stats = require_all_free(engine);
    CHECK(stats.prefill_tokens == 10);  // not 40
    CHECK(stats.forked_prompt_tokens == 30);
    CHECK(stats.total_tasks == 4);
    CHECK(stats.total_tokens == 4 * 6);
    CHECK(usage_of(result.wait()).prompt_tokens == 10);
    CHECK(usage_of(result.wait()).completion_tokens == 4 * 6);
  }
}

TEST_CASE("a contiguous cache with no free slot: the fork computes the prompt itself, same tokens",
          "[engine][choices]") {
  const TinyModel& m = tiny_model();
  std::mt19937 rng(8);
  EngineConfig config = contiguous_config(3, 16);
  config.cache_slots = 1;  // one slot: no choice can fork while another runs
  InferenceEngine engine(m.weights, m.tokenizer, config);
  const ChoicesRequest r{random_prompt(rng, 6), 3, 8, seeded(9)};
  const ChoicesResult result = engine.generate_choices(generation_request(r));
  check_choices(r, wait_all(result));
  const SchedulerStats stats = require_all_free(engine);
  CHECK(stats.forked_prompt_tokens == 0);
  CHECK(stats.prefill_tokens == 3 * 6);
}

TEST_CASE("cancelling an n-request cancels every choice, before or after the fork", "[engine][choices][cancel]") {
  const TinyModel& m = tiny_model();
  std::mt19937 rng(31);
  InferenceEngine engine(m.weights, m.tokenizer, paged_config(4, 16));
  Gate gate;
  auto blocked = hold_the_loop(engine, gate, rng);  // the n-request waits unforked
  const ChoicesRequest waiting{random_prompt(rng, 7), 3, 20, seeded(3)};
  const ChoicesResult before_fork = engine.generate_choices(generation_request(waiting));
  engine.cancel(before_fork);
  gate.open();
  for (const TaskOutput& out : wait_all(before_fork)) {
    CHECK(out.reason == FinishReason::Cancelled);
    CHECK(out.tokens.empty());
  }

  // After the fork: cancelled while the loop is held inside choice 1's third
  // token, so every choice ends Cancelled with a prefix of its reference tokens.
  const ChoicesRequest running{random_prompt(rng, 7), 3, 40, seeded(4)};
  GenerationRequest g = generation_request(running);
  g.ignore_eos = true;
  Gate third;
  std::atomic<int> seen = 0;
  g.on_token = [&, hold = third.callback()](const TokenEvent& e) {
    if (e.index == 1 && e.token >= 0 && ++seen == 3) hold(e);
  };
  auto result = std::make_shared<ChoicesResult>(engine.generate_choices(g));
  third.wait_entered();
  engine.cancel(*result);
  third.open();
  const std::vector<TaskOutput> outputs = wait_all(*result);
  for (int i = 0; i < running.n; ++i) {
    const auto& out = outputs[size_t(i)];
    const std::vector<int> expected = reference_tokens(*m.weights, *m.tokenizer, running.prompt, running.max_tokens,
                                                       SamplingParams(seeded(4 + uint64_t(i))), true);
    CHECK(out.reason == FinishReason::Cancelled);
    CHECK(out.tokens.size() < expected.size());
    CHECK(std::equal(out.tokens.begin(), out.tokens.end(), expected.begin()));
  }
  blocked->wait_for(kWaitTimeout);
  require_all_free(engine);
}

TEST_CASE("cancelling one choice before the fork leaves the others running", "[engine][choices][cancel]") {
  const TinyModel& m = tiny_model();
  std::mt19937 rng(32);
  InferenceEngine engine(m.weights, m.tokenizer, paged_config(4, 16));
  Gate gate;
  auto blocked = hold_the_loop(engine, gate, rng);
  const ChoicesRequest r{random_prompt(rng, 9), 3, 8, seeded(12)};
  const ChoicesResult result = engine.generate_choices(generation_request(r));
  engine.cancel(result.choices[2]->task_id());  // a choice still waiting to fork
  gate.open();
  const std::vector<TaskOutput> outputs = wait_all(result);
  CHECK(outputs[2].reason == FinishReason::Cancelled);
  CHECK(outputs[2].tokens.empty());
  for (int i : {0, 1}) CHECK(outputs[size_t(i)].tokens == expected_choice(r, i));
  blocked->wait_for(kWaitTimeout);
  require_all_free(engine);
}

TEST_CASE("n-requests batched with others, chunked and preempted still get the reference's tokens",
          "[engine][choices][batching]") {
  const TinyModel& m = tiny_model();
  std::mt19937 rng(99);
  std::vector<ChoicesRequest> requests;
  for (int k = 0; k < 6; ++k) {
    const int len = std::uniform_int_distribution<int>(1, 20)(rng);
    requests.push_back({random_prompt(rng, len), 1 + k % 4, std::uniform_int_distribution<int>(8, 40)(rng),
                        k % 3 == 2 ? greedy() : seeded(500 + uint64_t(k))});
  }
  // 20 pages of 4 for 8 running choices: the forks' copies and growth run out
  // of pages, so forked choices are preempted and recomputed.
  for (const EngineConfig& config : {paged_config(8, 8, 20), paged_config(8, 64), contiguous_config(8, 8)}) {
    auto batch_log = std::make_shared<BatchLog>();
    InferenceEngine engine(std::make_unique<RecordingExecutor>(m.weights, batch_log), m.tokenizer, config);
    std::vector<ChoicesResult> results;
    for (const auto& r : requests) results.push_back(engine.generate_choices(generation_request(r)));
    for (size_t k = 0; k < requests.size(); ++k) check_choices(requests[k], wait_all(results[k]));
    const SchedulerStats stats = require_all_free(engine);
    if (config.cache_pages == 20) CHECK(stats.preemptions > 0);
    check_batches(batch_log->snapshot(), config.scheduler);
  }
}

TEST_CASE("an invalid n-request is refused whole, before anything is queued", "[engine][choices][errors]") {
  const TinyModel& m = tiny_model();
  InferenceEngine engine(m.weights, m.tokenizer, paged_config(4, 16));
  GenerationRequest g;
  g.prompt_ids = std::vector<int>{5, 6, 7};
  g.max_tokens = 4;
  g.n = 5;  // more choices than running places
  CHECK_THROWS_AS(engine.generate_choices(g), std::invalid_argument);
  g.n = 0;
  CHECK_THROWS_AS(engine.generate_choices(g), std::invalid_argument);
  g.n = 2;
  CHECK_THROWS_AS(engine.generate_with_request(g), std::invalid_argument);  // n != 1 goes through generate_choices
  g.prompt_ids = std::vector<int>(size_t(m.context()) + 1, 5);  // too long
  CHECK_THROWS_AS(engine.generate_choices(g), std::invalid_argument);
  g.prompt_ids = std::vector<int>{5, 6, 7};
  g.sampling.top_p = 0.0f;  // bad sampling parameters
  CHECK_THROWS_AS(engine.generate_choices(g), std::invalid_argument);
  const SchedulerStats stats = require_all_free(engine);
  CHECK(stats.total_tasks == 0);
  CHECK(stats.steps == 0);
}

}  // namespace test_choices
