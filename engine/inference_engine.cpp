#include "engine/inference_engine.h"

#include <algorithm>

#include "engine/executor/reference_executor.h"
#include "engine/kv_cache/contiguous_cache.h"
#include "engine/kv_cache/page_cache.h"
#include "engine/request_decoder.h"

namespace astrai {

std::unique_ptr<KVCache> make_kv_cache(const ModelConfig& model, const EngineConfig& config) {
  const int slots = config.cache_slots > 0 ? config.cache_slots : config.scheduler.max_running_tasks;
  if (config.cache == KVCacheKind::Contiguous) return std::make_unique<ContiguousCache>(model, slots);
  const int pages_per_context = (model.max_seq_len + config.page_size - 1) / config.page_size;
  const int pages = config.cache_pages > 0 ? config.cache_pages : slots * pages_per_context;
  // Sliding-window layers get a pool of their own, whose pages go back as
  // the window passes them (docs/kv-cache.md "Sliding layers").
  const int sliding_pages = sliding_pages_for(model, pages, config.page_size, slots);
  return std::make_unique<PageCache>(model, pages, config.page_size, default_prefix_hash, sliding_pages);
}

InferenceEngine::InferenceEngine(std::unique_ptr<Executor> executor, std::shared_ptr<const Tokenizer> tokenizer,
                                 EngineConfig config)
    : tokenizer_(std::move(tokenizer)) {
  if (!executor) throw std::invalid_argument("InferenceEngine needs an executor");
  auto cache = make_kv_cache(executor->config(), config);
  start(std::move(executor), std::move(cache), config);
}

InferenceEngine::InferenceEngine(std::unique_ptr<Executor> executor, std::unique_ptr<KVCache> cache,
                                 std::shared_ptr<const Tokenizer> tokenizer, EngineConfig config)
    : tokenizer_(std::move(tokenizer)) {
  start(std::move(executor), std::move(cache), config);
}

void InferenceEngine::start(std::unique_ptr<Executor> executor, std::unique_ptr<KVCache> cache,
                            const EngineConfig& config) {
  if (!executor) throw std::invalid_argument("InferenceEngine needs an executor");
  if (!cache) throw std::invalid_argument("InferenceEngine needs a KV cache");
  if (!tokenizer_) throw std::invalid_argument("InferenceEngine needs a tokenizer");
  if (tokenizer_->vocab_size() != executor->config().vocab_size)
    throw std::invalid_argument("the tokenizer has " + std::to_string(tokenizer_->vocab_size()) +
                                " pieces but the model's vocabulary is " +
                                std::to_string(executor->config().vocab_size));
  scheduler_ = std::make_unique<InferenceScheduler>(std::move(executor), std::move(cache), config.scheduler);
}

InferenceEngine::InferenceEngine(std::shared_ptr<const ModelWeights> weights,
                                 std::shared_ptr<const Tokenizer> tokenizer, EngineConfig config)
    : InferenceEngine(std::make_unique<ReferenceExecutor>(std::move(weights)), std::move(tokenizer), config) {}

std::vector<KVCachedBlock> InferenceEngine::cached_blocks() const {
  std::vector<KVCachedBlock> blocks;
  scheduler_->with_cache([&](KVCache& cache) { blocks = cache.registered_blocks(); });
  return blocks;
}

bool InferenceEngine::reset_prefix_cache() {
  bool reset = false;
  scheduler_->with_cache([&](KVCache& cache) { reset = cache.reset_prefix_cache(); });
  return reset;
}

InferenceEngine::~InferenceEngine() {
  if (scheduler_) scheduler_->shutdown();
}

GenerationRequest InferenceEngine::make_request(const std::string& prompt, const GenerateParams& options) const {
  GenerationRequest request;
  request.prompt = prompt;
  request.max_tokens = options.max_tokens;
  request.sampling = options.sampling;
  request.stop = options.stop;
  return request;
}

// The scheduler's request for one choice, with a decoder behind its hooks.
std::pair<TokenRequest, std::shared_ptr<GenerateResult>> InferenceEngine::prepare(GenerationRequest request,
                                                                                  std::vector<int> prompt,
                                                                                  int index) {
  TokenRequest tokens;
  tokens.task_id = next_task_id_++;
  tokens.prompt = std::move(prompt);
  tokens.max_tokens = request.max_tokens;
  tokens.sampling = request.sampling;
  if (!request.ignore_eos) tokens.stop_tokens = tokenizer_->end_of_generation_ids();
  tokens.stop_tokens.insert(tokens.stop_tokens.end(), request.stop_token_ids.begin(), request.stop_token_ids.end());
  tokens.logprobs = request.logprobs;
  tokens.max_proposed = request.max_proposed;
  if (request.constraint) tokens.constraint = request.constraint->start();
  auto decoder = std::make_shared<RequestDecoder>(tokens.task_id, tokenizer_, tokens.prompt, tokens.stop_tokens,
                                                  std::move(request), index);
  tokens.on_token = [decoder](int token, const TokenLogprobs* logprobs) { return decoder->on_token(token, logprobs); };
  tokens.on_finish = [decoder](const TokenOutput& output) { decoder->on_finish(output); };
  return {std::move(tokens), decoder->result()};
}

std::vector<int> InferenceEngine::prompt_of(GenerationRequest& request) const {
  return request.prompt_ids ? std::move(*request.prompt_ids) : tokenize(request.prompt);
}

std::shared_ptr<GenerateResult> InferenceEngine::generate_with_request(GenerationRequest request) {
  if (request.n != 1)
    throw std::invalid_argument("n = " + std::to_string(request.n) + " choices: use generate_choices");
  std::vector<int> prompt = prompt_of(request);
  auto [tokens, result] = prepare(std::move(request), std::move(prompt), 0);
  scheduler_->submit(std::move(tokens));
  return result;
}

ChoicesResult InferenceEngine::generate_choices(GenerationRequest request) {
  if (request.n < 1) throw std::invalid_argument("n must be at least 1, got " + std::to_string(request.n));
  const std::vector<int> prompt = prompt_of(request);  // tokenized once
  std::vector<TokenRequest> choices;
  ChoicesResult result;
  for (int i = 0; i < request.n; ++i) {
    GenerationRequest choice = request;  // the callbacks are shared; each event says its index
    // vLLM's parallel sampling: choice i draws from seed + i. Without a seed
    // each choice's SamplerState seeds itself from std::random_device.
    if (request.sampling.seed) choice.sampling.seed = *request.sampling.seed + uint64_t(i);
    auto [tokens, handle] = prepare(std::move(choice), prompt, i);
    // n > 1 choices fork choice 0's constraint state (all start at the prompt's end).
    if (i > 0 && choices.front().constraint) tokens.constraint = choices.front().constraint->fork();
    choices.push_back(std::move(tokens));
    result.choices.push_back(std::move(handle));
  }
  scheduler_->submit_choices(std::move(choices));
  return result;
}

void InferenceEngine::cancel(const ChoicesResult& result) {
  for (const int id : result.task_ids()) scheduler_->cancel(id);
}

std::future<TaskOutput> InferenceEngine::generate_async(GenerationRequest request) {
  auto promise = std::make_shared<std::promise<TaskOutput>>();
  std::future<TaskOutput> future = promise->get_future();
  request.on_finish = [promise, caller = std::move(request.on_finish)](const TaskOutput& output) {
    // The future is kept whatever the caller's own on_finish does (its
    // exception is ignored, as always).
    try {
      if (caller) caller(output);
    } catch (...) {
    }
    promise->set_value(output);
  };
  generate_with_request(std::move(request));
  return future;
}

std::string InferenceEngine::generate(const std::string& prompt, const GenerateParams& options) {
  return generate_with_request(make_request(prompt, options))->wait().text;
}

std::vector<std::string> InferenceEngine::generate(const std::vector<std::string>& prompts,
                                                   const GenerateParams& options) {
  std::vector<std::shared_ptr<GenerateResult>> results;
  try {
    for (const auto& p : prompts) results.push_back(generate_with_request(make_request(p, options)));
  } catch (...) {
    for (auto& r : results) cancel(*r);  // all or nothing, like generate_stream
    throw;
  }
  std::vector<std::string> texts;
  for (auto& r : results) texts.push_back(r->wait().text);
  return texts;
}

TextStreamHandle InferenceEngine::generate_stream(const std::string& prompt, const GenerateParams& options) {
  return TextStreamHandle(generate_with_request(make_request(prompt, options)));
}

MultiStreamHandle InferenceEngine::generate_stream(const std::vector<std::string>& prompts,
                                                   const GenerateParams& options) {
  // Every request's callbacks feed one queue, so the reader waits on one
  // condition variable instead of polling each request.
  auto shared = std::make_shared<MultiStreamHandle::Shared>();
  shared->unfinished = prompts.size();
  std::vector<std::shared_ptr<GenerateResult>> submitted;
  try {
    for (size_t i = 0; i < prompts.size(); ++i) {
      GenerationRequest request = make_request(prompts[i], options);
      request.on_token = [shared, i](const TokenEvent& event) {
        if (event.text.empty()) return;
        std::lock_guard lock(shared->mutex);
        shared->pieces.push_back({i, std::string(event.text)});
        shared->changed.notify_all();
      };
      request.on_finish = [shared](const TaskOutput&) {
        std::lock_guard lock(shared->mutex);
        --shared->unfinished;
        shared->changed.notify_all();
      };
      submitted.push_back(generate_with_request(std::move(request)));
    }
  } catch (...) {
    for (auto& r : submitted) cancel(*r);  // all or nothing
    throw;
  }
  return MultiStreamHandle(shared);
}

std::optional<MultiStreamHandle::Piece> MultiStreamHandle::next() {
  std::unique_lock lock(shared_->mutex);
  shared_->changed.wait(lock, [&] { return !shared_->pieces.empty() || shared_->unfinished == 0; });
  if (shared_->pieces.empty()) return std::nullopt;
  Piece piece = std::move(shared_->pieces.front());
  shared_->pieces.pop_front();
  return piece;
}

}  // namespace astrai
