// What every engine test needs: a tiny synthetic model, engines over either
// KV cache, random requests with their reference answers, a way to submit
// them (together or staggered, with cancellations) and the checks that every
// scenario ends with: each output equals the sequential reference, streamed
// pieces concatenate to the text, and no cache page or slot is still held.
//
// Catch2 v2 assertions are not thread-safe: the scheduler thread's callbacks
// only record into RequestLog, and all checks run on the test thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/inference_engine.h"
#include "engine/generation_request.h"
#include "engine/tokenizer/tokenizer.h"
#include "reference/model_weights.h"
#include "tests/support/utf8_oracle.h"

namespace astrai::test {

// Longest any single wait of a test may take before it counts as a hang. A
// hang detector, not a speed claim: no assertion depends on how fast the
// machine is, so this is generous enough for a loaded 2-core sanitizer run.
inline constexpr std::chrono::milliseconds kWaitTimeout{120'000};

// dim 32, hidden 64, 2 layers, 4 heads, 2 kv heads, vocab 300, context 64:
// small enough that hundreds of requests and their references take seconds,
// and a context short enough for generations to reach it.
struct TinyModel {
  std::shared_ptr<const ModelWeights> weights;
  std::shared_ptr<const Tokenizer> tokenizer;
  int context() const { return weights->config.max_seq_len; }
  int vocab() const { return weights->config.vocab_size; }
};
const TinyModel& tiny_model();

// Engine configurations. Paged caches use 4-token pages; n_pages 0 means
// enough for every running task's whole context.
EngineConfig contiguous_config(int max_running, int tokens_per_step);
EngineConfig paged_config(int max_running, int tokens_per_step, int n_pages = 0);

// Aborts the whole program (naming `what`) unless disarmed within `limit`:
// the guard around calls that have no timeout of their own (generate(),
// streams, wait_until_idle), so that a hang fails CI instead of blocking it.
class Watchdog {
 public:
  Watchdog(std::string what, std::chrono::milliseconds limit = 2 * kWaitTimeout);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable disarmed_;
  bool done_ = false;
  std::thread thread_;
};

// Holds the scheduler thread inside a request's on_token callback until
// opened (or until kWaitTimeout, so that a failing test cannot hang): while
// it is closed, nothing is admitted, stepped or finished.
struct Gate {
  std::promise<void> open_promise;
  std::shared_future<void> opened = open_promise.get_future().share();
  std::atomic<bool> entered = false;

  std::function<void(const TokenEvent&)> callback() {
    return [this, opened = opened](const TokenEvent&) {
      if (entered.exchange(true)) return;  // only the first token waits
      opened.wait_for(kWaitTimeout);
    };
  }
  void wait_entered();  // FAILs after kWaitTimeout
  void open() { open_promise.set_value(); }
};

// One request of a scenario and its right answer.
struct PlannedRequest {
  std::vector<int> prompt;
  int max_tokens = 16;
  SamplingParams sampling;
  bool ignore_eos = false;
  std::vector<int> stop_token_ids;
  int logprobs = -1;  // >= 0: the outputs' and the stream's logprobs must equal expected_logprobs
  int cancel_after = -1;  // < 0: never cancelled; else cancelled once this many tokens exist (0: at once)
  std::vector<std::string> stop;  // stop sequences
  int max_proposed = -1;  // speculation: the engine's setting (-1), off (0), or at most n proposals per step
  std::vector<int> expected;  // the reference's tokens, stop sequences ignored (fill with compute_expected)
  std::vector<TokenLogprobs> expected_logprobs;  // one per expected token, when logprobs >= 0
  // Called on the scheduler thread after each token is recorded (e.g. a gate
  // that holds the loop still while the test acts).
  std::function<void(const TokenEvent&)> on_token_hook;
};

// cancel_after for requests that the test does not cancel itself but that may
// end cancelled all the same (by shutdown).
inline constexpr int kMayBeCancelled = 1 << 30;

struct RandomRequestShape {
  int min_prompt = 1, max_prompt = 40;
  int min_tokens = 1, max_tokens = 60;
  double sampled_fraction = 0.0;    // the rest are greedy (temperature 0)
  double cancelled_fraction = 0.0;  // cancelled after a random number of tokens
  double stop_fraction = 0.0;       // given stop sequences (one or two printable ASCII characters)
  double penalized_fraction = 0.0;  // sampled or greedy, with penalties, a bias and min_p drawn
  double logprobs_fraction = 0.0;   // asking for logprobs (0 to 5 top tokens)
};

// Prompt of random ids >= 3 (never <unk>, BOS or EOS).
std::vector<int> random_prompt(std::mt19937& rng, int length);
PlannedRequest random_request(std::mt19937& rng, const RandomRequestShape& shape);
std::vector<PlannedRequest> random_requests(std::mt19937& rng, int n, const RandomRequestShape& shape);
// Runs the sequential reference for every request (the expensive part, done once).
void compute_expected(std::vector<PlannedRequest>& requests);

// What one submitted request left behind.
struct RequestLog {
  std::shared_ptr<GenerateResult> result;
  std::mutex mutex;
  std::string on_token_text;          // on_token pieces, concatenated
  std::atomic<int> tokens_seen = 0;   // on_token calls with a real token
  std::vector<TokenLogprobs> streamed_logprobs;  // from on_token events, in order
  std::atomic<bool> finish_called = false;
  int on_finish_calls = 0;
  bool cancel_sent = false;           // by the test thread
};

enum class Submission {
  Together,   // all at once
  Staggered,  // each one only after the previous one has produced a token (or ended)
};

// Submits the requests (with an on_token/on_finish recorder), cancelling
// those whose cancel point comes while others are still being submitted.
std::vector<std::shared_ptr<RequestLog>> submit_requests(InferenceEngine& engine,
                                                         const std::vector<PlannedRequest>& requests,
                                                         Submission how);
// Cancels the rest at their cancel points and waits (with kWaitTimeout) for
// every request to end. REQUIREs that none hangs.
void finish_requests(InferenceEngine& engine, const std::vector<PlannedRequest>& requests,
                     std::vector<std::shared_ptr<RequestLog>>& logs);
// Both of the above.
std::vector<std::shared_ptr<RequestLog>> run_requests(InferenceEngine& engine,
                                                      const std::vector<PlannedRequest>& requests,
                                                      Submission how);


// The engine's output for request r must be the reference's tokens (a prefix
// of them when cancelled), with the reference's finish reason, and its
// streamed pieces (on_token and next_piece) must concatenate to its text.
void check_outputs(const std::vector<PlannedRequest>& requests, std::vector<std::shared_ptr<RequestLog>>& logs);

// The end of every scenario: the engine goes idle and holds no slot or page.
SchedulerStats require_all_free(InferenceEngine& engine);

// What the scheduler may put in one forward batch: at least one and at most
// max_tokens_per_step rows, of at most max_running_tasks tasks, each task's
// rows one run of consecutive positions of which only the last may want logits
// (with speculation: a last few, at most 1 + num_tokens).
void check_batches(const std::vector<std::vector<BatchToken>>& batches, const SchedulerConfig& config);

// prefix_hit_tokens counts each request's prefix-cache hit at its first
// admission only (a preempted task re-admitted onto its own pages is not a
// hit): the sum of the outputs' cached_prompt_tokens.
uint64_t cached_prompt_tokens_of(std::vector<std::shared_ptr<RequestLog>>& logs);

// output.tokens of request `log` (REQUIREs that it ended).
TaskOutput output_of(RequestLog& log);

}  // namespace astrai::test
