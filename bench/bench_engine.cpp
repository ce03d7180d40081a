// Continuous batching on the CPU reference executor: generated tokens per
// second for 1, 4, 16 and 64 concurrent requests, and the prefill a shared
// prompt prefix saves with the paged KV cache. Every figure is also printed
// as a ratio against the one-request baseline measured in the same run, so
// that runs on different machines compare.
//
// Model: the stories15M shape (preset_config("stories15M"): dim 288, hidden
// 768, 6 heads, context 256) cut to 2 layers and a 4096-piece synthetic
// vocabulary, so that the default run stays within about two minutes on two
// cores. Weights are seeded random: speed does not depend on their values.
//
// OpenBLAS threads: unless OPENBLAS_NUM_THREADS is set, the benchmark runs
// OpenBLAS on one thread. The reference computes every row with its own small
// sgemv (for batch invariance), and OpenBLAS's threading of such small
// products costs more than it gains: on a busy two-core machine it was 30x
// slower (29 instead of 880 tokens/s for one request).
//
// Run: ninja -C build bench/bench_engine && ./build/bench/bench_engine
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/inference_engine.h"
#include "reference/synthetic_model.h"
#include "engine/tokenizer/synthetic_tokenizer.h"

// OpenBLAS's own controls (the library every build links, see meson.build).
extern "C" void openblas_set_num_threads(int num_threads);
extern "C" int openblas_get_num_threads(void);

namespace {

using astrai::EngineConfig;
using astrai::GenerateResult;
using astrai::GenerationRequest;
using astrai::InferenceEngine;
using astrai::KVCacheKind;

constexpr int kPromptTokens = 16;
constexpr int kNewTokens = 32;
constexpr int kSharedPrefixTokens = 192;
constexpr int kPrefixRequests = 16;

struct BenchModel {
  std::shared_ptr<const astrai::ModelWeights> weights;
  std::shared_ptr<const astrai::Tokenizer> tokenizer;
};

const BenchModel& bench_model() {
  static const BenchModel model = [] {
    astrai::ModelConfig c = astrai::preset_config("stories15M");
    c.n_layers = 2;
    c.vocab_size = 4096;
    BenchModel m;
    m.weights = std::make_shared<const astrai::ModelWeights>(astrai::make_synthetic_weights(c, 15));
    m.tokenizer = std::make_shared<const astrai::Tokenizer>(astrai::make_synthetic_tokenizer(c.vocab_size));
    return m;
  }();
  return model;
}

std::vector<int> random_ids(std::mt19937& rng, int n) {
  std::uniform_int_distribution<int> id(3, bench_model().weights->config.vocab_size - 1);
  std::vector<int> ids(static_cast<size_t>(n), 0);
  for (int& t : ids) t = id(rng);
  return ids;
}

GenerationRequest request(std::vector<int> prompt, int max_tokens) {
  GenerationRequest r;
  r.prompt_ids = std::move(prompt);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0.0f;
  r.ignore_eos = true;  // every request generates exactly max_tokens
  return r;
}

// Submits all, then waits for all; returns the generated token count.
size_t run_batch(InferenceEngine& engine, std::vector<GenerationRequest> requests) {
  std::vector<std::shared_ptr<GenerateResult>> results;
  for (auto& r : requests) results.push_back(engine.generate_with_request(std::move(r)));
  size_t tokens = 0;
  for (auto& r : results) tokens += r->wait().tokens.size();
  return tokens;
}

// What each benchmark measured, for the ratios printed at the end.
std::map<std::string, double>& figures() {
  static std::map<std::string, double> f;
  return f;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// N requests of 16 prompt tokens and 32 new tokens each, submitted together.
void BM_EngineThroughput(benchmark::State& state) {
  const int concurrent = int(state.range(0));
  EngineConfig config;
  config.scheduler.max_running_tasks = concurrent;
  config.scheduler.max_tokens_per_step = std::max(256, concurrent);
  InferenceEngine engine(bench_model().weights, bench_model().tokenizer, config);
  std::mt19937 rng(1);
  size_t tokens = 0;
  double seconds = 0.0;
  for (auto _ : state) {
    std::vector<GenerationRequest> batch;
    for (int i = 0; i < concurrent; ++i) batch.push_back(request(random_ids(rng, kPromptTokens), kNewTokens));
    const auto start = std::chrono::steady_clock::now();
    tokens += run_batch(engine, std::move(batch));
    seconds += seconds_since(start);
  }
  const double rate = double(tokens) / seconds;
  state.counters["tok_per_s"] = rate;
  const std::string key = "throughput/" + std::to_string(concurrent);
  figures()[key] = rate;
  if (auto base = figures().find("throughput/1"); base != figures().end())
    state.counters["vs_1_request"] = rate / base->second;
}
BENCHMARK(BM_EngineThroughput)->Arg(1)->Arg(4)->Arg(16)->Arg(64)->MinTime(1.0)->Unit(benchmark::kMillisecond)->UseRealTime();

// 16 requests whose prompts share a 192-token prefix (and end in 8 tokens of
// their own), 8 new tokens each. The first runs alone, then the other 15
// together, as a server sees a popular system prompt. Arg 1: paged cache
// (the 15 hit the first one's pages); arg 0: contiguous cache (no sharing,
// every prompt prefilled in full). Arg 2: one request alone, the baseline.
void BM_SharedPrefix(benchmark::State& state) {
  const int mode = int(state.range(0));
  EngineConfig config;
  config.scheduler.max_running_tasks = kPrefixRequests;
  config.cache = mode == 1 ? KVCacheKind::Paged : KVCacheKind::Contiguous;
  InferenceEngine engine(bench_model().weights, bench_model().tokenizer, config);
  std::mt19937 rng(2);
  const int n_requests = mode == 2 ? 1 : kPrefixRequests;
  double seconds = 0.0;
  for (auto _ : state) {
    // A new prefix every iteration, so that no iteration hits an earlier one's pages.
    const std::vector<int> prefix = random_ids(rng, kSharedPrefixTokens);
    auto prompt = [&] {
      std::vector<int> p = prefix;
      const std::vector<int> own = random_ids(rng, 8);
      p.insert(p.end(), own.begin(), own.end());
      return p;
    };
    std::vector<GenerationRequest> rest;
    for (int i = 1; i < n_requests; ++i) rest.push_back(request(prompt(), 8));
    const auto start = std::chrono::steady_clock::now();
    run_batch(engine, {request(prompt(), 8)});
    if (!rest.empty()) run_batch(engine, std::move(rest));
    seconds += seconds_since(start);
  }
  const astrai::SchedulerStats stats = engine.wait_until_idle();
  const double per_iteration = seconds / double(state.iterations());
  state.counters["ms_per_batch"] = per_iteration * 1e3;
  state.counters["prefix_hit_tokens_per_batch"] = double(stats.prefix_hit_tokens) / double(state.iterations());
  static const char* names[] = {"prefix/unshared", "prefix/shared", "prefix/one"};
  figures()[names[mode]] = per_iteration;
  if (auto one = figures().find("prefix/one"); one != figures().end() && mode != 2)
    state.counters["x_one_request_time"] = per_iteration / one->second;
}
BENCHMARK(BM_SharedPrefix)->Arg(2)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

void print_ratios() {
  const auto& f = figures();
  std::printf("\nEngine on cpu-reference with %d OpenBLAS thread(s), model %s\n", openblas_get_num_threads(),
              bench_model().weights->config.describe().c_str());
  if (auto base = f.find("throughput/1"); base != f.end()) {
    std::printf("%-28s %12s %14s\n", "concurrent requests", "tok/s", "vs 1 request");
    for (int n : {1, 4, 16, 64})
      if (auto it = f.find("throughput/" + std::to_string(n)); it != f.end())
        std::printf("%-28d %12.1f %13.2fx\n", n, it->second, it->second / base->second);
  }
  auto one = f.find("prefix/one"), shared = f.find("prefix/shared"), unshared = f.find("prefix/unshared");
  if (one != f.end() && shared != f.end() && unshared != f.end()) {
    std::printf("\n%d requests sharing a %d-token prefix (1 alone first, then %d together):\n", kPrefixRequests,
                kSharedPrefixTokens, kPrefixRequests - 1);
    std::printf("  one request alone:          %8.1f ms\n", one->second * 1e3);
    std::printf("  contiguous cache (no share): %8.1f ms = %5.2fx one request\n", unshared->second * 1e3,
                unshared->second / one->second);
    std::printf("  paged cache (prefix hits):   %8.1f ms = %5.2fx one request\n", shared->second * 1e3,
                shared->second / one->second);
    std::printf("  speedup from sharing:        %8.2fx\n", unshared->second / shared->second);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (!std::getenv("OPENBLAS_NUM_THREADS")) openblas_set_num_threads(1);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  print_ratios();
  benchmark::Shutdown();
  return 0;
}
