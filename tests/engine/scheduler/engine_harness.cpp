// The shared machinery of the engine tests (see engine_harness.h).
#include "tests/engine/scheduler/engine_harness.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <catch2/catch.hpp>

#include "reference/synthetic_model.h"
#include "engine/tokenizer/synthetic_tokenizer.h"
#include "tests/engine/scheduler/reference_oracle.h"

namespace astrai::test {

const TinyModel& tiny_model() {
  static const TinyModel model = [] {
    ModelConfig c{.dim = 32, .hidden_dim = 64, .n_layers = 2, .n_heads = 4, .n_kv_heads = 2, .vocab_size = 300,
                  .max_seq_len = 64};
    TinyModel m;
    m.weights = std::make_shared<const ModelWeights>(make_synthetic_weights(c, 20240611));
    m.tokenizer = std::make_shared<const Tokenizer>(make_synthetic_tokenizer(c.vocab_size));
    return m;
  }();
  return model;
}

EngineConfig contiguous_config(int max_running, int tokens_per_step) {
  EngineConfig config;
  config.scheduler.max_running_tasks = max_running;
  config.scheduler.max_tokens_per_step = tokens_per_step;
  config.cache = KVCacheKind::Contiguous;
  return config;
}

EngineConfig paged_config(int max_running, int tokens_per_step, int n_pages) {
  EngineConfig config = contiguous_config(max_running, tokens_per_step);
  config.cache = KVCacheKind::Paged;
  config.page_size = 4;
  config.cache_pages = n_pages;
  return config;
}

Watchdog::Watchdog(std::string what, std::chrono::milliseconds limit) {
  thread_ = std::thread([this, what = std::move(what), limit] {
    std::unique_lock lock(mutex_);
    if (!disarmed_.wait_for(lock, limit, [&] { return done_; })) {
      std::fprintf(stderr, "HANG: %s did not return within %lld ms\n", what.c_str(), (long long)limit.count());
      std::abort();
    }
  });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    done_ = true;
  }
  disarmed_.notify_all();
  thread_.join();
}

std::vector<int> random_prompt(std::mt19937& rng, int length) {
  std::uniform_int_distribution<int> id(3, tiny_model().vocab() - 1);
  std::vector<int> prompt(size_t(length), 0);
  for (int& t : prompt) t = id(rng);
  return prompt;
}

PlannedRequest random_request(std::mt19937& rng, const RandomRequestShape& shape) {
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto chance = [&](double p) { return std::uniform_real_distribution<double>(0.0, 1.0)(rng) < p; };
  PlannedRequest r;
  r.prompt = random_prompt(rng, uniform(shape.min_prompt, shape.max_prompt));
  r.max_tokens = uniform(shape.min_tokens, shape.max_tokens);
  if (chance(shape.sampled_fraction)) {
    r.sampling.temperature = float(uniform(5, 15)) / 10.0f;
    r.sampling.top_k = uniform(0, 60);
    r.sampling.top_p = float(uniform(50, 100)) / 100.0f;
    r.sampling.seed = uint64_t(uniform(0, 1 << 30));
  } else {
    r.sampling.temperature = 0.0f;
  }
  if (chance(shape.penalized_fraction)) {
    // Penalties strong enough to change greedy choices on this model's logits
    // (spread about 1), a bias that bans a token or two, and min_p.
    r.sampling.presence_penalty = float(uniform(-20, 20)) / 10.0f;
    r.sampling.frequency_penalty = float(uniform(-20, 20)) / 10.0f;
    r.sampling.repetition_penalty = float(uniform(5, 20)) / 10.0f;
    r.sampling.min_p = float(uniform(0, 30)) / 100.0f;
    for (int b = uniform(0, 3); b > 0; --b) {
      const int id = uniform(0, tiny_model().vocab() - 1);
      bool taken = false;
      for (const auto& entry : r.sampling.logit_bias) taken = taken || entry.first == id;
      if (!taken) r.sampling.logit_bias.emplace_back(id, chance(0.5) ? -100.0f : float(uniform(-50, 50)) / 10.0f);
    }
  }
  if (chance(shape.logprobs_fraction)) r.logprobs = uniform(0, 5);
  if (chance(shape.cancelled_fraction)) r.cancel_after = uniform(0, r.max_tokens);
  if (chance(shape.stop_fraction)) {
    auto printable = [&] { return char(uniform(' ', '~')); };
    r.stop = {std::string(1, printable()), std::string{printable(), printable()}};
  }
  return r;
}

std::vector<PlannedRequest> random_requests(std::mt19937& rng, int n, const RandomRequestShape& shape) {
  std::vector<PlannedRequest> requests;
  for (int i = 0; i < n; ++i) requests.push_back(random_request(rng, shape));
  return requests;
}

void compute_expected(std::vector<PlannedRequest>& requests) {
  const TinyModel& m = tiny_model();
  for (auto& r : requests) {
    r.expected_logprobs.clear();
    r.expected = reference_tokens(*m.weights, *m.tokenizer, r.prompt, r.max_tokens, r.sampling, r.ignore_eos,
                                  r.stop_token_ids, r.logprobs, &r.expected_logprobs);
  }
}

namespace {

GenerationRequest engine_request(const PlannedRequest& planned, const std::shared_ptr<RequestLog>& log) {
  GenerationRequest request;
  request.prompt_ids = planned.prompt;
  request.max_tokens = planned.max_tokens;
  request.sampling = planned.sampling;
  request.ignore_eos = planned.ignore_eos;
  request.stop_token_ids = planned.stop_token_ids;
  request.logprobs = planned.logprobs;
  request.stop = planned.stop;
  request.max_proposed = planned.max_proposed;
  // The callbacks own the log too: it outlives the request even if a test fails early.
  request.on_token = [log, hook = planned.on_token_hook](const TokenEvent& event) {
    {
      std::lock_guard lock(log->mutex);
      log->on_token_text += event.text;
      if (event.token >= 0) ++log->tokens_seen;
      if (event.logprobs) log->streamed_logprobs.push_back(*event.logprobs);
    }
    if (hook) hook(event);
  };
  request.on_finish = [log](const TaskOutput&) {
    std::lock_guard lock(log->mutex);
    ++log->on_finish_calls;
    log->finish_called = true;
  };
  return request;
}

}  // namespace

namespace {

// Cancels every submitted request that has reached its cancel point; true when
// no cancel point is left.
bool send_due_cancels(InferenceEngine& engine, const std::vector<PlannedRequest>& requests,
                      const std::vector<std::shared_ptr<RequestLog>>& logs) {
  bool all_sent = true;
  for (size_t i = 0; i < logs.size(); ++i) {
    RequestLog& log = *logs[i];
    const int at = requests[i].cancel_after;
    if (!log.result || at < 0 || at == kMayBeCancelled || log.cancel_sent) continue;
    if (log.tokens_seen >= at || log.result->done()) {
      engine.cancel(*log.result);
      log.cancel_sent = true;
    } else {
      all_sent = false;
    }
  }
  return all_sent;
}

// Polls `condition` (sending due cancels meanwhile) until it holds; FAILs past the deadline.
template <typename Condition>
void poll_until(InferenceEngine& engine, const std::vector<PlannedRequest>& requests,
                const std::vector<std::shared_ptr<RequestLog>>& logs, const Condition& condition, const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + kWaitTimeout;
  while (!condition()) {
    send_due_cancels(engine, requests, logs);
    if (std::chrono::steady_clock::now() > deadline) FAIL("timed out waiting for " << what);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

}  // namespace

std::vector<std::shared_ptr<RequestLog>> submit_requests(InferenceEngine& engine,
                                                         const std::vector<PlannedRequest>& requests,
                                                         Submission how) {
  std::vector<std::shared_ptr<RequestLog>> logs;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (how == Submission::Staggered && i > 0) {
      const RequestLog& previous = *logs.back();
      poll_until(engine, requests, logs, [&] { return previous.tokens_seen > 0 || previous.result->done(); },
                 "the previous request's first token");
    }
    auto log = std::make_shared<RequestLog>();
    log->result = engine.generate_with_request(engine_request(requests[i], log));
    logs.push_back(std::move(log));
    send_due_cancels(engine, requests, logs);
  }
  return logs;
}

void finish_requests(InferenceEngine& engine, const std::vector<PlannedRequest>& requests,
                     std::vector<std::shared_ptr<RequestLog>>& logs) {
  poll_until(engine, requests, logs, [&] { return send_due_cancels(engine, requests, logs); },
             "the cancellation points");
  for (size_t i = 0; i < logs.size(); ++i) {
    INFO("request " << i << " of " << logs.size());
    REQUIRE(logs[i]->result->wait_for(kWaitTimeout).has_value());
  }
}

std::vector<std::shared_ptr<RequestLog>> run_requests(InferenceEngine& engine,
                                                      const std::vector<PlannedRequest>& requests,
                                                      Submission how) {
  auto logs = submit_requests(engine, requests, how);
  finish_requests(engine, requests, logs);
  return logs;
}

TaskOutput output_of(RequestLog& log) {
  const std::optional<TaskOutput> out = log.result->wait_for(kWaitTimeout);
  REQUIRE(out.has_value());
  return *out;
}

namespace {

// The bytes each token adds to the text: a stop_token_ids token is never text
// (as EOS is not: it decodes to nothing anyway).
std::vector<std::string> text_bytes(const PlannedRequest& r, const std::vector<int>& tokens) {
  std::vector<std::string> bytes = token_bytes(*tiny_model().tokenizer, r.prompt, tokens);
  for (size_t i = 0; i < tokens.size(); ++i)
    if (std::find(r.stop_token_ids.begin(), r.stop_token_ids.end(), tokens[i]) != r.stop_token_ids.end()) bytes[i].clear();
  return bytes;
}

bool same_logprobs(const TokenLogprobs& a, const TokenLogprobs& b) {
  if (a.logprob != b.logprob || a.top.size() != b.top.size()) return false;
  for (size_t i = 0; i < a.top.size(); ++i)
    if (a.top[i].token != b.top[i].token || a.top[i].logprob != b.top[i].logprob) return false;
  return true;
}

// Exact, for the reason the tokens are: the engine's row for a token has the
// reference loop's bits, and token_logprobs is one deterministic function of it.
void check_logprobs(const PlannedRequest& r, const TaskOutput& out, RequestLog& log) {
  if (r.logprobs < 0) {
    CHECK(out.logprobs.empty());
    return;
  }
  REQUIRE(out.logprobs.size() == out.tokens.size());
  for (size_t t = 0; t < out.tokens.size(); ++t) {
    INFO("token " << t);
    CHECK(same_logprobs(out.logprobs[t], r.expected_logprobs[t]));
  }
  std::lock_guard lock(log.mutex);
  REQUIRE(log.streamed_logprobs.size() == out.logprobs.size());
  for (size_t t = 0; t < out.logprobs.size(); ++t) CHECK(same_logprobs(log.streamed_logprobs[t], out.logprobs[t]));
}

}  // namespace

void check_outputs(const std::vector<PlannedRequest>& requests, std::vector<std::shared_ptr<RequestLog>>& logs) {
  const TinyModel& m = tiny_model();
  REQUIRE(requests.size() == logs.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const PlannedRequest& r = requests[i];
    RequestLog& log = *logs[i];
    const TaskOutput out = output_of(log);
    INFO("request " << i << ": prompt of " << r.prompt.size() << " tokens, max_tokens " << r.max_tokens
                    << ", temperature " << r.sampling.temperature << ", top_k " << r.sampling.top_k << ", top_p "
                    << r.sampling.top_p << ", seed " << r.sampling.seed.value_or(0) << ", cancel_after "
                    << r.cancel_after << ", finished as " << to_string(out.reason));
    REQUIRE(out.error.empty());
    CHECK(out.prompt_tokens == int(r.prompt.size()));
    // The reference's tokens, cut after the one that completes a stop sequence.
    const StopOutcome full = expected_stop_outcome(text_bytes(r, r.expected), r.stop);
    const std::vector<int> expected(r.expected.begin(), r.expected.begin() + std::ptrdiff_t(full.n_tokens));
    if (out.reason == FinishReason::Cancelled) {
      REQUIRE(r.cancel_after >= 0);
      REQUIRE(out.tokens.size() <= expected.size());
      REQUIRE(std::equal(out.tokens.begin(), out.tokens.end(), expected.begin()));
    } else {
      // Exact: the engine runs the reference forward pass, which gives a row
      // the same bits in any batch (reference/linear.h), and each request
      // draws from its own generator, so it sees what the sequential loop sees.
      REQUIRE(out.tokens == expected);
      if (full.matched.empty())
        REQUIRE(out.reason ==
                reference_reason(*m.tokenizer, r.expected, r.max_tokens, r.ignore_eos, r.stop_token_ids));
      else
        REQUIRE(out.reason == FinishReason::StopSequence);
    }
    // The text follows from the tokens' bytes and the stop sequences alone, and
    // every way of streaming it agrees.
    const StopOutcome got = expected_stop_outcome(text_bytes(r, out.tokens), r.stop);
    CHECK(out.text == got.text);
    CHECK(out.stop_sequence == got.matched);
    for (const auto& s : r.stop) CHECK(out.text.find(s) == std::string::npos);
    {
      std::lock_guard lock(log.mutex);
      CHECK(log.on_token_text == out.text);
      CHECK(log.on_finish_calls == 1);
    }
    CHECK(log.tokens_seen == int(out.tokens.size()));
    check_logprobs(r, out, log);
    std::string streamed;
    while (auto piece = log.result->next_piece()) streamed += *piece;  // never blocks: the request has ended
    CHECK(streamed == out.text);
  }
}

void Gate::wait_entered() {
  const auto deadline = std::chrono::steady_clock::now() + kWaitTimeout;
  while (!entered) {
    if (std::chrono::steady_clock::now() > deadline) FAIL("the scheduler never reached the gate");
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

void check_batches(const std::vector<std::vector<BatchToken>>& batches, const SchedulerConfig& config) {
  REQUIRE(!batches.empty());
  for (size_t b = 0; b < batches.size(); ++b) {
    const auto& batch = batches[b];
    INFO("batch " << b << " of " << batches.size() << ": " << batch.size() << " rows");
    REQUIRE(!batch.empty());
    REQUIRE(int(batch.size()) <= config.max_tokens_per_step);
    std::vector<int> seqs;
    int wanted_in_run = 0;
    for (size_t r = 0; r < batch.size(); ++r) {
      const bool continues = r > 0 && batch[r].seq == batch[r - 1].seq;
      if (continues) {
        REQUIRE(batch[r].pos == batch[r - 1].pos + 1);  // one run of consecutive positions
        // Only a run's last row samples; with speculation, a decode row and
        // the proposals after it sample at every row (and nothing else does).
        if (batch[r - 1].want_logits) REQUIRE((config.speculation.enabled() && batch[r].want_logits));
      } else {
        REQUIRE(std::find(seqs.begin(), seqs.end(), batch[r].seq) == seqs.end());  // one run per task
        seqs.push_back(batch[r].seq);
        wanted_in_run = 0;
      }
      if (batch[r].want_logits) REQUIRE(++wanted_in_run <= 1 + config.speculation.num_tokens);
    }
    REQUIRE(int(seqs.size()) <= config.max_running_tasks);
  }
}

uint64_t cached_prompt_tokens_of(std::vector<std::shared_ptr<RequestLog>>& logs) {
  uint64_t sum = 0;
  for (auto& log : logs) sum += uint64_t(output_of(*log).cached_prompt_tokens);
  return sum;
}

SchedulerStats require_all_free(InferenceEngine& engine) {
  SchedulerStats stats;
  {
    Watchdog guard("wait_until_idle");
    stats = engine.wait_until_idle();
  }
  if (stats.active_tasks != 0 || stats.waiting_queue != 0) {
    // Every request has ended, yet the loop still counts tasks: it kept
    // finished ones. Its shutdown would then wait on them forever, so stop
    // here, loudly, instead of hanging until a timeout.
    std::fprintf(stderr, "FATAL: every request ended but the engine reports %d running and %d waiting tasks\n",
                 stats.active_tasks, stats.waiting_queue);
    std::abort();
  }
  CHECK(stats.cache.tasks == 0);
  CHECK(stats.cache.blocks_held == 0);
  CHECK(stats.cache.blocks_held + stats.cache.blocks_cached + stats.cache.blocks_free == stats.cache.blocks_total);
  return stats;
}

}  // namespace astrai::test
