// The engine API: text in, text out, over one continuously batching scheduler.
//
//   InferenceEngine engine(load_model("model.gguf"));
//   std::string text = engine.generate("Once upon a time");
//   for (auto stream = engine.generate_stream("Once"); auto piece = stream.next();) std::cout << *piece;
//
// Every call may come from any thread; requests from all of them are batched
// together, and batching never changes what a request gets. The scheduler
// deals in token ids; each request's text is made by a RequestDecoder the
// engine puts behind its hooks (docs/engine.md).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/executor/executor.h"
#include "engine/choices_result.h"
#include "engine/generate_result.h"
#include "engine/generation_request.h"
#include "engine/scheduler/inference_scheduler.h"
#include "engine/tokenizer/tokenizer.h"
#include "reference/model_weights.h"

namespace astrai {

enum class KVCacheKind { Contiguous, Paged };

struct EngineConfig {
  SchedulerConfig scheduler;
  KVCacheKind cache = KVCacheKind::Contiguous;
  int cache_slots = 0;   // contiguous: task slots (0 = scheduler.max_running_tasks)
  int page_size = 16;    // paged: tokens per page
  int cache_pages = 0;   // paged: pages (0 = enough for cache_slots full contexts)
};

// Options for the convenience calls (generate, generate_stream).
struct GenerateParams {
  int max_tokens = kDefaultMaxTokens;
  SamplingParams sampling;
  std::vector<std::string> stop;
};

// A stream of text pieces of one request.
class TextStreamHandle {
 public:
  explicit TextStreamHandle(std::shared_ptr<GenerateResult> result) : result_(std::move(result)) {}
  // The next piece, or nullopt at the end.
  std::optional<std::string> next() { return result_->next_piece(); }
  GenerateResult& result() { return *result_; }

 private:
  std::shared_ptr<GenerateResult> result_;
};

// Pieces of several requests as they come, each tagged with its prompt's index.
class MultiStreamHandle {
 public:
  struct Piece {
    size_t index;
    std::string text;
  };
  // What the requests' callbacks fill and next() drains.
  struct Shared {
    std::mutex mutex;
    std::condition_variable changed;
    std::deque<Piece> pieces;
    size_t unfinished = 0;
  };
  explicit MultiStreamHandle(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}
  // The next piece of any request, or nullopt when all have ended.
  std::optional<Piece> next();

 private:
  std::shared_ptr<Shared> shared_;
};

class InferenceEngine {
 public:
  // Runs on any executor (the CPU reference, or CUDA when built).
  InferenceEngine(std::unique_ptr<Executor> executor, std::shared_ptr<const Tokenizer> tokenizer,
                  EngineConfig config = {});
  // Runs on any executor with a cache it can use (the CUDA executor needs its
  // device cache; config's cache fields are then ignored).
  InferenceEngine(std::unique_ptr<Executor> executor, std::unique_ptr<KVCache> cache,
                  std::shared_ptr<const Tokenizer> tokenizer, EngineConfig config = {});
  // Runs on the CPU reference.
  InferenceEngine(std::shared_ptr<const ModelWeights> weights, std::shared_ptr<const Tokenizer> tokenizer,
                  EngineConfig config = {});
  ~InferenceEngine();

  std::string generate(const std::string& prompt, const GenerateParams& options = {});
  std::vector<std::string> generate(const std::vector<std::string>& prompts, const GenerateParams& options = {});
  TextStreamHandle generate_stream(const std::string& prompt, const GenerateParams& options = {});
  MultiStreamHandle generate_stream(const std::vector<std::string>& prompts, const GenerateParams& options = {});

  // The general form: returns at once; the result fills in as the scheduler
  // works (wait(), next_piece(), or the request's on_token callback). Throws
  // as InferenceScheduler::submit does when the request is refused.
  // Throws std::invalid_argument for request.n != 1 (generate_choices).
  std::shared_ptr<GenerateResult> generate_with_request(GenerationRequest request);
  // request.n choices of one prompt (vLLM's parallel sampling): the prompt is
  // computed once and its K/V shared (InferenceScheduler::submit_choices);
  // choice i samples with seed + i when a seed is given, so it equals
  // generate_with_request with that seed and n = 1. Returns at once, one
  // GenerateResult per choice; the request's callbacks get every choice's
  // events and outputs, each with its index. All or nothing: a refused
  // request (n < 1, n > max_running_tasks, or whatever refuses one choice)
  // throws before anything is queued.
  ChoicesResult generate_choices(GenerationRequest request);
  // The same, as a future of the finished output (ready just after the
  // request's on_finish ran), for callers that wait or poll without a
  // thread per request; on_token streams alongside as usual.
  std::future<TaskOutput> generate_async(GenerationRequest request);

  // Tokenizes a prompt as generate() does (BOS first).
  std::vector<int> tokenize(const std::string& text) const { return tokenizer_->encode(text, true); }

  SchedulerStats get_stats() const { return scheduler_->stats(); }
  // "ngram", or "off" (SchedulerConfig::speculation): for /stats.
  std::string speculation_method() const { return scheduler_->speculation_method(); }
  SchedulerStats wait_until_idle() const { return scheduler_->wait_until_idle(); }
  // False once shutdown() has begun (new requests are then refused).
  bool accepting() const { return scheduler_->accepting(); }
  void cancel(int task_id) { scheduler_->cancel(task_id); }
  void cancel(const GenerateResult& result) { scheduler_->cancel(result.task_id()); }
  void cancel(const ChoicesResult& result);  // every choice
  // Stops accepting work; running requests get `grace` to finish, then are cancelled.
  void shutdown(std::chrono::milliseconds grace = std::chrono::milliseconds(0)) { scheduler_->shutdown(grace); }

  // KV cache events and the prefix cache behind them (engine/kv_cache/kv_events.h), each done on
  // the scheduler's thread between two steps: InferenceScheduler::set_kv_event_sink; the cache's
  // registered prefix pages now (each after its parent); and a prefix cache reset (vLLM's
  // reset_prefix_cache), false while any request holds cache room.
  void set_kv_event_sink(std::shared_ptr<KVEventSink> sink) { scheduler_->set_kv_event_sink(std::move(sink)); }
  std::vector<KVCachedBlock> cached_blocks() const;
  bool reset_prefix_cache();

  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const ModelConfig& model_config() const { return scheduler_->model_config(); }
  std::string executor_name() const { return scheduler_->executor_name(); }
  // Memory the model's weights and the KV cache's storage take where the
  // executor keeps them (device memory for the CUDA backend).
  size_t weights_bytes() const { return scheduler_->weights_bytes(); }
  size_t kv_cache_bytes() const { return scheduler_->kv_cache_bytes(); }
  // Of kv_cache_bytes(), the sliding-window layers' own pool (0: none).
  size_t kv_cache_sliding_bytes() const { return scheduler_->kv_cache_sliding_bytes(); }

 private:
  // Checks the parts and starts the scheduler (shared by the constructors).
  void start(std::unique_ptr<Executor> executor, std::unique_ptr<KVCache> cache, const EngineConfig& config);
  GenerationRequest make_request(const std::string& prompt, const GenerateParams& options) const;
  std::vector<int> prompt_of(GenerationRequest& request) const;  // its ids, or its text tokenized
  std::pair<TokenRequest, std::shared_ptr<GenerateResult>> prepare(GenerationRequest request, std::vector<int> prompt,
                                                                   int index);

  std::shared_ptr<const Tokenizer> tokenizer_;
  std::unique_ptr<InferenceScheduler> scheduler_;
  std::atomic<int> next_task_id_ = 1;
};

// The cache an EngineConfig asks for, sized for the model.
std::unique_ptr<KVCache> make_kv_cache(const ModelConfig& model, const EngineConfig& config);

}  // namespace astrai
