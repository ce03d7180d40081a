// The engine's life around the requests: statistics, a full waiting queue,
// invalid requests and configurations, shutdown with work in flight, and a
// stress run of a few hundred random requests with cancellations.
#include <chrono>
#include <cmath>
#include <future>
#include <limits>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "engine/executor/reference_executor.h"
#include "engine/scheduler/admission.h"
#include "engine/scheduler/inference_scheduler.h"
#include "engine/tokenizer/synthetic_tokenizer.h"
#include "tests/engine/scheduler/engine_harness.h"
#include "tests/engine/scheduler/reference_oracle.h"

namespace {

using namespace astrai;
using namespace astrai::test;

PlannedRequest long_request(std::mt19937& rng, int max_tokens) {
  PlannedRequest r;
  r.prompt = random_prompt(rng, 4);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0.0f;
  r.ignore_eos = true;
  return r;
}

}  // namespace

TEST_CASE("Statistics count every task and token, and show nothing active at the end", "[engine][stats]") {
  const TinyModel& m = tiny_model();
  std::mt19937 rng(1111);
  auto requests = random_requests(rng, 9, {});
  compute_expected(requests);
  InferenceEngine engine(m.weights, m.tokenizer, contiguous_config(3, 8));
  const SchedulerStats before = engine.get_stats();
  CHECK(before.total_tasks == 0);
  CHECK(before.total_tokens == 0);
  CHECK(before.cache.blocks_total == 3);  // one slot per running place

  auto logs = run_requests(engine, requests, Submission::Together);
  check_outputs(requests, logs);
  const SchedulerStats stats = require_all_free(engine);
  uint64_t tokens = 0, prompt_tokens = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    tokens += output_of(*logs[i]).tokens.size();
    prompt_tokens += requests[i].prompt.size();
  }
  CHECK(stats.total_tasks == requests.size());
  CHECK(stats.total_tokens == tokens);
  CHECK(stats.prefill_tokens == prompt_tokens);  // no preemption or prefix hit with this cache
  CHECK(stats.prefix_hit_tokens == 0);
  CHECK(stats.preemptions == 0);
  CHECK(stats.steps > 0);
  CHECK(stats.cache.blocks_free == 3);
  CHECK(engine.get_stats().total_tasks == requests.size());
}

// Admission counts as waiting only the requests that will not get a running
// place (engine/scheduler/admission.h): with max_running_tasks 1 and
// max_waiting_tasks 1 the queue holds two requests, whether or not the loop
// has yet moved the first one to running. The loop is held between two steps
// (a with_cache job waits on a latch) while a burst arrives, so every request
// of the burst is still in the submission queue: the state a burst met when
// the loop was slow, where the old count refused all but the first. Then the
// first request holds the loop inside its first token (it runs, the second
// waits): one more is refused. The outcome depends on no thread's timing.
TEST_CASE("Admission: running places plus the waiting bound, before and after the loop moves a request",
          "[engine][queue]") {
  const TinyModel& m = tiny_model();
  EngineConfig config = paged_config(1, 8);
  config.scheduler.max_waiting_tasks = 1;
  InferenceScheduler scheduler(std::make_unique<ReferenceExecutor>(m.weights), make_kv_cache(m.weights->config, config),
                               config.scheduler);
  std::promise<void> release_loop, loop_held;
  std::thread holder([&, released = release_loop.get_future().share()] {
    scheduler.with_cache([&](KVCache&) {
      loop_held.set_value();
      released.wait_for(kWaitTimeout);
    });
  });
  loop_held.get_future().wait();
  Gate gate;
  std::vector<int> accepted;
  int refused = 0;
  for (int id = 1; id <= 6; ++id) {
    TokenRequest r;
    r.task_id = id;
    r.prompt = {1, 2, 3};
    r.max_tokens = 8;
    r.sampling.temperature = 0.0f;
    if (id == 1) r.on_token = [cb = gate.callback()](int token, const TokenLogprobs*) {
      cb(TokenEvent{1, token});
      return false;
    };
    try {
      scheduler.submit(std::move(r));
      accepted.push_back(id);
    } catch (const QueueFullError&) {
      ++refused;
    }
  }
  CHECK(accepted == std::vector<int>{1, 2});  // one to run, one to wait
  CHECK(refused == 4);
  release_loop.set_value();
  holder.join();
  gate.wait_entered();  // request 1 runs (held in its first token), request 2 waits
  TokenRequest late;
  late.task_id = 7;
  late.prompt = {1, 2, 3};
  CHECK_THROWS_AS(scheduler.submit(std::move(late)), QueueFullError);
  gate.open();
  const SchedulerStats stats = scheduler.wait_until_idle();
  CHECK(stats.total_tasks == 2);
  scheduler.shutdown();
}

// The same count with requests of several choices (forks take running
// places too): of 4 places, a request of 3 choices runs; one of 2 cannot
// fit beside it and waits; one of 1 would fit, but the policy admits first
// come first served, so it would wait behind the other: refused.
TEST_CASE("Admission: choices take running places, first come first served", "[engine][queue]") {
  CHECK(queue_has_room(4, std::vector<int>{}, 3, 1));
  CHECK(queue_has_room(4, std::vector<int>{3}, 2, 1));
  CHECK_FALSE(queue_has_room(4, std::vector<int>{3, 2}, 1, 1));
  CHECK(queue_has_room(4, std::vector<int>{3, 1}, 2, 1));    // 3 and 1 run, 2 waits
  CHECK_FALSE(queue_has_room(0, std::vector<int>{1}, 1, 1));  // nothing free: both would wait
  CHECK(queue_has_room(1, std::vector<int>{}, 1, 0));         // max_waiting 0: only what runs at once
  CHECK_FALSE(queue_has_room(1, std::vector<int>{1}, 1, 0));
}

TEST_CASE("A full waiting queue rejects a request with QueueFullError; a waiting request can be cancelled",
          "[engine][queue]") {
  const TinyModel& m = tiny_model();
  std::mt19937 rng(1212);
  EngineConfig config = contiguous_config(1, 4);
  config.scheduler.max_waiting_tasks = 2;
  InferenceEngine engine(m.weights, m.tokenizer, config);

  std::vector<PlannedRequest> requests = {long_request(rng, 10), long_request(rng, 10), long_request(rng, 10)};
  compute_expected(requests);
  Gate gate;
  std::vector<std::shared_ptr<GenerateResult>> results;
  GenerationRequest first;
  first.prompt_ids = requests[0].prompt;
  first.max_tokens = requests[0].max_tokens;
  first.sampling = requests[0].sampling;
  first.ignore_eos = true;
  first.on_token = gate.callback();
  results.push_back(engine.generate_with_request(first));
  gate.wait_entered();  // the only running place is taken and the loop stands still

  for (size_t i = 1; i < 3; ++i) {
    GenerationRequest r;
    r.prompt_ids = requests[i].prompt;
    r.max_tokens = requests[i].max_tokens;
    r.sampling = requests[i].sampling;
    r.ignore_eos = true;
    results.push_back(engine.generate_with_request(r));
  }
  CHECK(engine.get_stats().waiting_queue == 2);
  GenerationRequest one_too_many;
  one_too_many.prompt_ids = requests[0].prompt;
  CHECK_THROWS_AS(engine.generate_with_request(one_too_many), QueueFullError);
  engine.cancel(*results[2]);  // still waiting: it ends without a token
  gate.open();

  for (size_t i = 0; i < 3; ++i) {
    INFO("request " << i);
    const auto out = results[i]->wait_for(kWaitTimeout);
    REQUIRE(out.has_value());
    if (i < 2) {
      CHECK(out->reason == FinishReason::Length);
      CHECK(out->tokens == requests[i].expected);
    } else {
      CHECK(out->reason == FinishReason::Cancelled);
      CHECK(out->tokens.empty());
      CHECK(out->text.empty());
    }
  }
  const SchedulerStats stats = require_all_free(engine);
  CHECK(stats.total_tasks == 3);  // the rejected one never counted
}

TEST_CASE("Invalid requests are rejected with std::invalid_argument and leave the engine working",
          "[engine][errors]") {
  const TinyModel& m = tiny_model();
  InferenceEngine engine(m.weights, m.tokenizer, paged_config(2, 4));
  auto valid = [] {
    GenerationRequest r;
    r.prompt_ids = std::vector<int>{5, 6, 7};
    r.max_tokens = 4;
    r.sampling.temperature = 0.0f;
    return r;
  };
  auto rejected = [&](const char* what, GenerationRequest r) {
    INFO(what);
    try {
      engine.generate_with_request(std::move(r));
      FAIL("accepted");
    } catch (const std::invalid_argument& e) {
      INFO("message: " << e.what());
      CHECK(std::string(e.what()).size() > 10);
    }
  };
  GenerationRequest r = valid();
  r.prompt_ids = std::vector<int>{};
  rejected("empty prompt", r);
  r = valid();
  r.prompt_ids = std::vector<int>(size_t(m.context() + 1), 5);
  rejected("prompt longer than the context", r);
  r = valid();
  r.prompt_ids = std::vector<int>{5, m.vocab()};
  rejected("token id past the vocabulary", r);
  r = valid();
  r.prompt_ids = std::vector<int>{-1};
  rejected("negative token id", r);
  r = valid();
  r.max_tokens = 0;
  rejected("max_tokens 0", r);
  r = valid();
  r.sampling.temperature = -0.5f;
  rejected("negative temperature", r);
  r = valid();
  r.sampling.temperature = std::numeric_limits<float>::quiet_NaN();
  rejected("NaN temperature", r);
  r = valid();
  r.sampling.top_k = -1;
  rejected("negative top_k", r);
  r = valid();
  r.sampling.top_p = 0.0f;
  rejected("top_p 0", r);
  r = valid();
  r.sampling.top_p = 1.5f;
  rejected("top_p above 1", r);

  GenerateParams bad;
  bad.sampling.top_p = 2.0f;
  {
    Watchdog guard("generate with bad parameters");
    CHECK_THROWS_AS(engine.generate("Hello", bad), std::invalid_argument);
    // All or nothing: the first prompts were accepted, then cancelled when a later one failed.
    CHECK_THROWS_AS(engine.generate_stream(std::vector<std::string>{"a", std::string(200, 'b')}, GenerateParams{}),
                    std::invalid_argument);
  }
  CHECK(engine.get_stats().total_tasks <= 1);

  const auto out = engine.generate_with_request(valid())->wait_for(kWaitTimeout);
  REQUIRE(out.has_value());
  CHECK(out->tokens.size() == 4);
  require_all_free(engine);
}

TEST_CASE("Invalid engine configurations are rejected with std::invalid_argument", "[engine][errors]") {
  const TinyModel& m = tiny_model();
  CHECK_THROWS_AS(InferenceEngine(m.weights, m.tokenizer, contiguous_config(0, 4)), std::invalid_argument);
  CHECK_THROWS_AS(InferenceEngine(m.weights, m.tokenizer, contiguous_config(8, 4)), std::invalid_argument);
  EngineConfig no_waiting = contiguous_config(2, 4);
  no_waiting.scheduler.max_waiting_tasks = 0;
  CHECK_THROWS_AS(InferenceEngine(m.weights, m.tokenizer, no_waiting), std::invalid_argument);
  auto other_vocab = std::make_shared<const Tokenizer>(make_synthetic_tokenizer(m.vocab() + 1));
  CHECK_THROWS_AS(InferenceEngine(m.weights, other_vocab, contiguous_config(2, 4)), std::invalid_argument);
  CHECK_THROWS_AS(InferenceEngine(std::shared_ptr<const ModelWeights>(), m.tokenizer), std::invalid_argument);
  CHECK_THROWS_AS(InferenceEngine(m.weights, nullptr), std::invalid_argument);
  // A page cache that cannot hold one whole context would end a lone request
  // before the context does, unlike the reference loop.
  CHECK_THROWS_AS(InferenceEngine(m.weights, m.tokenizer, paged_config(2, 4, m.context() / 4 - 1)),
                  std::invalid_argument);
  InferenceEngine exactly_one_context(m.weights, m.tokenizer, paged_config(2, 4, m.context() / 4));
}

TEST_CASE("generate() of a list is all or nothing: an invalid prompt cancels the ones before it",
          "[engine][errors]") {
  const TinyModel& m = tiny_model();
  InferenceEngine engine(m.weights, m.tokenizer, contiguous_config(1, 4));
  // A request holding the only running place, with the loop stopped inside its first token.
  Gate gate;
  GenerationRequest holder;
  holder.prompt_ids = std::vector<int>{5, 6};
  holder.max_tokens = 3;
  holder.sampling.temperature = 0.0f;
  holder.on_token = gate.callback();
  auto held = engine.generate_with_request(holder);
  gate.wait_entered();

  GenerateParams params;
  params.max_tokens = 10;
  {
    Watchdog guard("generate(list) with an invalid prompt");
    // "a" is queued first, then the 200-byte prompt (too long for the context) is refused.
    CHECK_THROWS_AS(engine.generate(std::vector<std::string>{"a", std::string(200, 'b')}, params),
                    std::invalid_argument);
  }
  gate.open();
  REQUIRE(held->wait_for(kWaitTimeout).has_value());
  const SchedulerStats stats = require_all_free(engine);
  CHECK(stats.total_tasks == 2);
  CHECK(stats.total_tokens == 3);  // the holder's alone: "a" was cancelled before it ran
}

TEST_CASE("A callback that throws ends its own request with an error; the engine goes on", "[engine][errors]") {
  const TinyModel& m = tiny_model();
  std::mt19937 rng(1515);
  auto requests = random_requests(rng, 6, {});
  compute_expected(requests);
  for (const bool in_on_finish : {false, true}) {
    INFO((in_on_finish ? "on_finish" : "on_token") << " throws");
    InferenceEngine engine(m.weights, m.tokenizer, paged_config(3, 8));
    GenerationRequest bad;
    bad.prompt_ids = std::vector<int>{7, 8, 9};
    bad.max_tokens = 20;
    bad.sampling.temperature = 0.0f;
    // A stop sequence starting with the first token's text: that text is held
    // back, so ending the request calls on_token once more to release it.
    const auto first = reference_tokens(*m.weights, *m.tokenizer, *bad.prompt_ids, 1, bad.sampling);
    const std::string first_text = m.tokenizer->decode_token(9, first.at(0));
    REQUIRE(!first_text.empty());
    bad.stop = {first_text + "\x01\x02"};
    auto thrower = [](auto&&...) { throw std::runtime_error("the client went away"); };
    if (in_on_finish)
      bad.on_finish = thrower;
    else
      bad.on_token = thrower;
    auto bad_result = engine.generate_with_request(bad);
    auto logs = run_requests(engine, requests, Submission::Together);
    check_outputs(requests, logs);
    const auto out = bad_result->wait_for(kWaitTimeout);
    REQUIRE(out.has_value());
    if (!in_on_finish) {
      CHECK(out->reason == FinishReason::Error);
      CHECK(out->error.find("the client went away") != std::string::npos);
      CHECK(out->tokens.size() == 1);
    }
    require_all_free(engine);
  }
}

namespace {

// The reference executor, except that every logits row of the sequence whose
// prompt starts with kPoisonMarker has a NaN at token 3, as a broken model
// would produce for one request.
constexpr int kPoisonMarker = 2;  // random_prompt() draws ids from 3 up

class PoisoningExecutor final : public Executor {
 public:
  explicit PoisoningExecutor(std::shared_ptr<const ModelWeights> weights) : inner_(std::move(weights)) {}
  const ModelConfig& config() const override { return inner_.config(); }
  std::string name() const override { return "poisoning cpu-reference"; }
  xt::xtensor<float, 2> forward(std::span<const BatchToken> batch, KVCacheView& cache) override {
    xt::xtensor<float, 2> logits = inner_.forward(batch, cache);
    size_t wanted = 0;
    for (const BatchToken& row : batch) {
      if (row.pos == 0 && row.token == kPoisonMarker) poisoned_seq_ = row.seq;
      if (!row.want_logits) continue;
      if (row.seq == poisoned_seq_) logits(wanted, 3) = std::numeric_limits<float>::quiet_NaN();
      ++wanted;
    }
    return logits;
  }

 private:
  ReferenceExecutor inner_;
  int poisoned_seq_ = -1;
};

}  // namespace

TEST_CASE("Bad logits in one row end only that request, with the sampler's error", "[engine][errors]") {
  const TinyModel& m = tiny_model();
  std::mt19937 rng(1616);
  auto requests = random_requests(rng, 8, {});
  compute_expected(requests);
  EngineConfig config = paged_config(4, 8);
  auto executor = std::make_unique<PoisoningExecutor>(m.weights);
  InferenceEngine engine(std::move(executor), m.tokenizer, config);
  GenerationRequest bad;
  bad.prompt_ids = std::vector<int>{kPoisonMarker, 7, 8};
  bad.max_tokens = 5;
  bad.sampling.temperature = 0.0f;
  auto bad_result = engine.generate_with_request(bad);
  auto logs = run_requests(engine, requests, Submission::Together);
  check_outputs(requests, logs);  // everyone else: their sequential tokens
  const auto out = bad_result->wait_for(kWaitTimeout);
  REQUIRE(out.has_value());
  CHECK(out->reason == FinishReason::Error);
  CHECK(out->tokens.empty());
  CHECK_THAT(out->error, Catch::Contains("sampling failed") && Catch::Contains("token 3 is NaN"));
  require_all_free(engine);
}

TEST_CASE("Shutdown with requests in flight ends every one of them without a hang", "[engine][shutdown]") {
  const TinyModel& m = tiny_model();
  std::mt19937 rng(1313);
  std::vector<PlannedRequest> requests;
  for (int i = 0; i < 10; ++i) {
    requests.push_back(long_request(rng, 59));
    requests.back().cancel_after = kMayBeCancelled;
  }
  compute_expected(requests);

  SECTION("at once: the rest are cancelled, and later submissions are refused") {
    for (const EngineConfig& config : {contiguous_config(3, 6), paged_config(3, 6, 20)}) {
      // The first request's first token holds the loop still (a Gate) until
      // shutdown() has begun, so the moment of shutdown is fixed whatever the
      // machine's speed: no request can have finished its 59 tokens, and the
      // last is still waiting behind the 3 running places.
      Gate gate;
      std::vector<PlannedRequest> gated = requests;
      gated[0].on_token_hook = gate.callback();
      InferenceEngine engine(m.weights, m.tokenizer, config);
      auto logs = submit_requests(engine, gated, Submission::Together);
      gate.wait_entered();
      {
        Watchdog guard("shutdown()");
        std::thread stopper([&] { engine.shutdown(); });
        const auto deadline = std::chrono::steady_clock::now() + kWaitTimeout;
        while (engine.accepting() && std::chrono::steady_clock::now() < deadline)
          std::this_thread::sleep_for(std::chrono::microseconds(100));
        const bool stopping = !engine.accepting();
        gate.open();
        stopper.join();
        REQUIRE(stopping);
      }
      finish_requests(engine, requests, logs);
      check_outputs(requests, logs);  // cancelled: a prefix of the reference; else the reference
      for (auto& log : logs) CHECK(output_of(*log).reason == FinishReason::Cancelled);  // none could finish
      GenerationRequest late;
      late.prompt_ids = std::vector<int>{5};
      CHECK_THROWS_AS(engine.generate_with_request(late), std::runtime_error);
      require_all_free(engine);
      Watchdog guard("a second shutdown()");
      engine.shutdown();  // idempotent
    }
  }
  SECTION("with a grace period: everything finishes normally") {
    InferenceEngine engine(m.weights, m.tokenizer, paged_config(4, 8));
    auto logs = submit_requests(engine, requests, Submission::Together);
    {
      // A grace far longer than the watchdog's limit: shutdown() returning at
      // all shows that it returns when the work is done, not when grace ends.
      Watchdog guard("shutdown(grace)");
      engine.shutdown(std::chrono::hours(24));
    }
    finish_requests(engine, requests, logs);
    check_outputs(requests, logs);
    for (auto& log : logs) CHECK(output_of(*log).reason == FinishReason::Length);
    require_all_free(engine);
  }
  SECTION("by destruction: results outlive the engine and all have ended") {
    std::vector<std::shared_ptr<RequestLog>> logs;
    {
      Watchdog guard("~InferenceEngine");
      InferenceEngine engine(m.weights, m.tokenizer, contiguous_config(3, 6));
      logs = submit_requests(engine, requests, Submission::Together);
    }
    for (size_t i = 0; i < logs.size(); ++i) REQUIRE(logs[i]->result->done());
    check_outputs(requests, logs);
  }
}

TEST_CASE("Stress: a few hundred random requests with cancellations finish with no leak and no hang",
          "[engine][stress]") {
  const TinyModel& m = tiny_model();
  std::mt19937 rng(1414);
  auto requests = random_requests(rng, 300, {.min_prompt = 1, .max_prompt = 48, .min_tokens = 1, .max_tokens = 40,
                                             .sampled_fraction = 0.5, .cancelled_fraction = 0.2,
                                             .stop_fraction = 0.2});
  compute_expected(requests);
  // A cache so small that preemption is routine, with prefix hits among requests of the same
  // few first tokens, and prompts chunked across steps.
  for (auto& r : requests)
    if (r.prompt.size() > 8 && rng() % 3 == 0) std::copy_n(requests[0].prompt.begin(), 8, r.prompt.begin());
  compute_expected(requests);
  InferenceEngine engine(m.weights, m.tokenizer, paged_config(8, 16, 24));
  // Submitted in bursts of 1..30 requests while earlier ones run.
  std::vector<std::shared_ptr<RequestLog>> logs;
  for (size_t begin = 0; begin < requests.size();) {
    const size_t end = std::min(requests.size(), begin + 1 + rng() % 30);
    std::vector<PlannedRequest> burst(requests.begin() + std::ptrdiff_t(begin), requests.begin() + std::ptrdiff_t(end));
    auto burst_logs = submit_requests(engine, burst, Submission::Together);
    logs.insert(logs.end(), burst_logs.begin(), burst_logs.end());
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 3));
    begin = end;
  }
  finish_requests(engine, requests, logs);
  check_outputs(requests, logs);
  const SchedulerStats stats = require_all_free(engine);
  CHECK(stats.total_tasks == requests.size());
  INFO("stress run: " << stats.total_tokens << " tokens, " << stats.steps << " steps, " << stats.preemptions
                       << " preemptions, " << stats.prefix_hit_tokens << " prefix-hit tokens");
  CHECK(stats.preemptions > 0);
  CHECK(stats.prefix_hit_tokens > 0);
  CHECK(stats.prefix_hit_tokens == cached_prompt_tokens_of(logs));
}

TEST_CASE("Requests submitted and cancelled from several threads at once get their sequential tokens",
          "[engine][threads]") {
  const TinyModel& m = tiny_model();
  std::mt19937 rng(1616);
  auto requests = random_requests(rng, 48, {.sampled_fraction = 0.5, .cancelled_fraction = 0.25});
  compute_expected(requests);
  InferenceEngine engine(m.weights, m.tokenizer, paged_config(6, 12, 30));
  constexpr size_t kThreads = 4;
  std::vector<std::vector<PlannedRequest>> slices(kThreads);
  for (size_t i = 0; i < requests.size(); ++i) slices[i % kThreads].push_back(requests[i]);
  std::vector<std::vector<std::shared_ptr<RequestLog>>> logs(kThreads);
  std::vector<std::string> errors(kThreads);
  {
    std::vector<std::thread> threads;
    for (size_t k = 0; k < kThreads; ++k)
      threads.emplace_back([&, k] {
        try {  // no Catch2 assertion may run here: Together submission makes none
          logs[k] = submit_requests(engine, slices[k], Submission::Together);
        } catch (const std::exception& e) {
          errors[k] = e.what();
        }
      });
    for (auto& t : threads) t.join();
  }
  for (size_t k = 0; k < kThreads; ++k) {
    INFO("thread " << k);
    REQUIRE(errors[k].empty());
    finish_requests(engine, slices[k], logs[k]);
    check_outputs(slices[k], logs[k]);
  }
  const SchedulerStats stats = require_all_free(engine);
  CHECK(stats.total_tasks == requests.size());
}
