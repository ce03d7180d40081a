// Speed of the CPU reference (reference/): each op at the shapes of a small
// real model (llama2.c's stories15M: dim 288, hidden 768, 6 heads of 48) and
// of a Llama-7B layer (dim 4096, hidden 11008, 32 heads of 128), and
// single-stream greedy decode tokens per second on stories260K and on a
// synthetic model of stories15M's shape. docs/benchmarks.md explains each
// figure and records measured values.
//
// Every rate is per second of real (wall-clock) time: OpenBLAS may run a
// product on worker threads, whose CPU time the main thread's clock would not
// see. The op benchmarks use OpenBLAS's thread count as the environment sets
// it (OPENBLAS_NUM_THREADS, default: one per core); the decode benchmarks set
// it per run.
#include <benchmark/benchmark.h>
#include <cblas.h>  // OpenBLAS: openblas_set_num_threads

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/model_files/load_model.h"
#include "engine/speculative/ngram_proposer.h"
#include "reference/synthetic_model.h"
#include "reference/attention.h"
#include "reference/dense_kv_cache.h"
#include "reference/forward.h"
#include "reference/generate.h"
#include "reference/linear.h"
#include "reference/rmsnorm.h"
#include "reference/rope.h"
#include "reference/sampling/sampler.h"
#include "reference/speculative_generate.h"
#include "reference/swiglu.h"

namespace {

using astrai::BatchToken;
using astrai::DenseKVCache;
using astrai::ModelConfig;
using astrai::ModelWeights;

// ---------------------------------------------------------------- inputs

// Uniform values in [-1, 1) from a 64-bit LCG: fast enough to fill a 7B
// layer's 180 MB matrices, and the values do not affect the speed.
void fill_random(float* data, size_t n, uint64_t seed) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    data[i] = float(s >> 40) * (2.0f / 16777216.0f) - 1.0f;
  }
}

xt::xtensor<float, 2> random_matrix(size_t rows, size_t cols, uint64_t seed) {
  xt::xtensor<float, 2> m({rows, cols});
  fill_random(m.data(), m.size(), seed);
  return m;
}

xt::xtensor<float, 1> random_vector(size_t n, uint64_t seed) {
  auto v = xt::xtensor<float, 1>::from_shape({n});  // ({n}) would be the one value n
  fill_random(v.data(), v.size(), seed);
  return v;
}

// The op shapes: a real small model and one layer of a big one.
struct OpShape {
  int dim, hidden, n_heads, head_dim;
};
constexpr OpShape kStories15M{288, 768, 6, 48};
constexpr OpShape kLlama7B{4096, 11008, 32, 128};

ModelConfig one_layer_config(const OpShape& s, int context) {
  ModelConfig c;
  c.dim = s.dim;
  c.hidden_dim = s.hidden;
  c.n_layers = 1;
  c.n_heads = s.n_heads;
  c.n_kv_heads = s.n_heads;
  c.vocab_size = 1;
  c.max_seq_len = context;
  return c;
}

// ---------------------------------------------------------------- ops

// y = x W^T with W [out, in], for state.range(0) rows. FLOP/s counts
// 2 * rows * out * in; bytes/s counts W once per row, since each row is its
// own sgemv that streams all of W (reference/linear.h says why).
void bm_linear(benchmark::State& state, int out, int in) {
  const auto rows = size_t(state.range(0));
  const auto W = random_matrix(size_t(out), size_t(in), 1);
  const auto x = random_matrix(rows, size_t(in), 2);
  for (auto _ : state) {
    auto y = astrai::linear(x, W);
    benchmark::DoNotOptimize(y.data());
  }
  const double flops = 2.0 * double(rows) * out * in;
  state.counters["FLOP/s"] = benchmark::Counter(flops * double(state.iterations()), benchmark::Counter::kIsRate);
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(rows) * out * in * int64_t(sizeof(float)));
}

// RMSNorm of rows x dim; bytes/s counts x read and y written.
void bm_rmsnorm(benchmark::State& state, int dim) {
  const auto rows = size_t(state.range(0));
  const auto x = random_matrix(rows, size_t(dim), 3);
  const auto weight = random_vector(size_t(dim), 4);
  for (auto _ : state) {
    auto y = astrai::rmsnorm(x, weight, 1e-5f);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(rows) * dim * 2 * int64_t(sizeof(float)));
}

// RoPE in place on rows x (n_heads * head_dim) query rows at positions
// 100, 101, ...; items/s counts rotated pairs.
void bm_rope(benchmark::State& state, OpShape s) {
  const auto rows = size_t(state.range(0));
  auto x = random_matrix(rows, size_t(s.n_heads * s.head_dim), 5);
  std::vector<int> positions(rows);
  for (size_t r = 0; r < rows; ++r) positions[r] = 100 + int(r);
  const std::vector<float> freqs = astrai::rope_frequencies(s.head_dim, 10000.0f);
  for (auto _ : state) {
    astrai::apply_rope(x, positions, freqs, astrai::RopeLayout::AdjacentPairs);
    benchmark::DoNotOptimize(x.data());
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(x.size() / 2));
}

// One decode step's attention: a query row at position context-1 against
// `context` cached positions of every head. FLOP/s counts q.k and p*v
// (4 * n_heads * context * head_dim); bytes/s counts the K and V rows read.
void bm_attention(benchmark::State& state, OpShape s) {
  const int context = int(state.range(0));
  const ModelConfig c = one_layer_config(s, context);
  DenseKVCache cache(c, 1);
  for (int pos = 0; pos < context; ++pos) {
    const auto k = random_vector(size_t(c.kv_dim()), 10 + uint64_t(pos));
    const auto v = random_vector(size_t(c.kv_dim()), 5000 + uint64_t(pos));
    cache.write(0, 0, pos, k.data(), v.data());
  }
  const auto q = random_matrix(1, size_t(c.q_dim()), 6);
  const BatchToken row{0, 0, context - 1, false};
  for (auto _ : state) {
    auto out = astrai::causal_attention(q, std::span<const BatchToken>(&row, 1), cache, 0, c);
    benchmark::DoNotOptimize(out.data());
  }
  const double flops = 4.0 * s.n_heads * double(context) * s.head_dim;
  state.counters["FLOP/s"] = benchmark::Counter(flops * double(state.iterations()), benchmark::Counter::kIsRate);
  state.SetBytesProcessed(int64_t(state.iterations()) * 2 * int64_t(context) * c.kv_dim() *
                          int64_t(sizeof(float)));
}

// The SwiGLU feed-forward block (three linears and the gating) on
// state.range(0) rows; FLOP/s counts the three products, 6 * rows * dim * hidden.
void bm_swiglu(benchmark::State& state, OpShape s) {
  const auto rows = size_t(state.range(0));
  const auto dim = size_t(s.dim), hidden = size_t(s.hidden);
  astrai::LayerWeights layer;
  layer.w_gate = random_matrix(hidden, dim, 7);
  layer.w_up = random_matrix(hidden, dim, 8);
  layer.w_down = random_matrix(dim, hidden, 9);
  const auto x = random_matrix(rows, dim, 10);
  for (auto _ : state) {
    auto y = astrai::swiglu_ffn(x, layer);
    benchmark::DoNotOptimize(y.data());
  }
  const double flops = 6.0 * double(rows) * double(dim) * double(hidden);
  state.counters["FLOP/s"] = benchmark::Counter(flops * double(state.iterations()), benchmark::Counter::kIsRate);
}

// ---------------------------------------------------------------- decode

// The shared data folder: $ASTRAI_SHARED_DIR, else ../shared beside the
// source tree, else ../shared or ../../shared from the working directory.
std::optional<std::string> shared_file(const std::string& relative) {
  std::vector<std::filesystem::path> roots;
  if (const char* env = std::getenv("ASTRAI_SHARED_DIR"); env && *env) roots.emplace_back(env);
#ifdef ASTRAI_SOURCE_ROOT
  roots.emplace_back(std::filesystem::path(ASTRAI_SOURCE_ROOT) / ".." / "shared");
#endif
  roots.emplace_back("../shared");
  roots.emplace_back("../../shared");
  for (const auto& root : roots)
    if (std::filesystem::exists(root / relative)) return (root / relative).string();
  return std::nullopt;
}

// Process CPU time (all threads) in seconds.
double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// Single-stream greedy decoding as a user sees it: prefill `prompt` in one
// batch (not timed), then generate state.range(0) tokens one forward pass at
// a time, each fed back at the next position, exactly as astrai::generate
// does.
//  - tok_per_s: generated tokens / decode wall time (the figure a user sees).
//  - tok_per_cpu_s: generated tokens / decode CPU time of all threads. On a
//    shared, loaded machine this estimates what an idle core would give
//    (with one BLAS thread); with two it shows the threads' total work.
// state.range(1) sets OpenBLAS's thread count (0 leaves its default, which
// OPENBLAS_NUM_THREADS or the number of cores decides).
void run_decode(benchmark::State& state, const ModelWeights& weights, const std::vector<int>& prompt) {
  const int n_tokens = int(state.range(0));
  if (int(prompt.size()) + n_tokens > weights.config.max_seq_len) {
    state.SkipWithError("prompt plus generated tokens exceed the model's context");
    return;
  }
  const int blas_threads_before = openblas_get_num_threads();
  if (state.range(1) > 0) openblas_set_num_threads(int(state.range(1)));
  state.counters["blas_threads"] = openblas_get_num_threads();

  std::vector<BatchToken> prefill;
  for (size_t i = 0; i < prompt.size(); ++i) prefill.push_back({prompt[i], 0, int(i), i + 1 == prompt.size()});
  double cpu_seconds = 0.0;
  for (auto _ : state) {
    DenseKVCache cache(weights.config, 1);
    auto logits = astrai::forward(weights, prefill, cache);
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = process_cpu_seconds();
    for (int pos = int(prompt.size()); pos < int(prompt.size()) + n_tokens; ++pos) {
      const int token = astrai::argmax(std::span<const float>(logits.data(), logits.shape(1)));
      const BatchToken next{token, 0, pos, true};
      logits = astrai::forward(weights, std::span<const BatchToken>(&next, 1), cache);
    }
    cpu_seconds += process_cpu_seconds() - cpu_start;
    const std::chrono::duration<double> decode_time = std::chrono::steady_clock::now() - start;
    state.SetIterationTime(decode_time.count());
  }
  const double generated = double(n_tokens) * double(state.iterations());
  state.counters["tok_per_s"] = benchmark::Counter(generated, benchmark::Counter::kIsRate);
  state.counters["tok_per_cpu_s"] = generated / cpu_seconds;
  openblas_set_num_threads(blas_threads_before);
}

// llama2.c's stories260K from the shared data, read once; null (and the
// benchmark skipped, saying why) when it is missing or unreadable.
const astrai::LoadedModel* stories260K(benchmark::State& state) {
  const auto model = shared_file("models/stories260K/stories260K.bin");
  const auto tokenizer = shared_file("models/stories260K/tok512.bin");
  if (!model || !tokenizer) {
    state.SkipWithError("shared data missing: models/stories260K/stories260K.bin and tok512.bin (set ASTRAI_SHARED_DIR)");
    return nullptr;
  }
  static std::optional<astrai::LoadedModel> loaded;
  try {
    if (!loaded) loaded = astrai::load_model(*model, *tokenizer);
  } catch (const std::exception& e) {
    state.SkipWithError((std::string("cannot load stories260K: ") + e.what()).c_str());
    return nullptr;
  }
  return &*loaded;
}

// stories260K, prompt "Once upon a time".
void bm_decode_stories260K(benchmark::State& state) {
  if (const auto* model = stories260K(state)) run_decode(state, model->weights, model->tokenizer.encode("Once upon a time"));
}

// Greedy decoding of 128 tokens with n-gram speculation (state.range(0) = 1,
// NgramOptions' defaults) or without (0), side by side, on editing-style
// input: the prompt is a story and its first sentence again, and the model
// retells the story, which lookup in the prompt predicts (the model's own
// greedy story after "Once upon a time", 128 tokens, then that opening
// again). Each iteration times the whole call, the prompt's prefill
// included (the same work with and without speculation); one BLAS thread. Counters: tok_per_s, and per
// generated token the forward passes and the rows scored (passes plus
// proposals: the reference scores a pass row by row, so its time follows
// rows, not passes; a GPU's memory-bound decode pass costs about the same
// for 1 row as for 6, which is where speculation pays).
void bm_speculative_stories260K(benchmark::State& state) {
  const auto* model = stories260K(state);
  if (!model) return;
  const ModelWeights& weights = model->weights;
  const bool speculate = state.range(0) != 0;
  astrai::GenerateOptions options;
  options.max_new_tokens = 128;
  static const std::vector<int> prompt = [&] {
    std::vector<int> opening = model->tokenizer.encode("Once upon a time");
    std::vector<int> story = opening;
    astrai::GenerateOptions told;
    told.max_new_tokens = 128;
    const auto rest = astrai::generate(weights, opening, told, astrai::argmax);
    story.insert(story.end(), rest.begin(), rest.end());
    story.insert(story.end(), opening.begin() + 1, opening.end());  // the opening again, without BOS
    return story;
  }();
  if (int(prompt.size()) + options.max_new_tokens > weights.config.max_seq_len) {
    state.SkipWithError("prompt plus generated tokens exceed the model's context");
    return;
  }
  const int blas_threads_before = openblas_get_num_threads();
  openblas_set_num_threads(1);
  const astrai::TokenProposer ngram = [](std::span<const int> context, int most) {
    return astrai::propose_ngram(context, astrai::NgramOptions{}, most);
  };
  const astrai::TokenProposer none = [](std::span<const int>, int) { return std::vector<int>{}; };
  astrai::SpeculationCounts counts;
  double generated = 0;
  for (auto _ : state) {
    counts = {};
    const auto ids = astrai::generate_speculative(weights, prompt, options, astrai::argmax, speculate ? ngram : none, &counts);
    generated += double(ids.size());
  }
  const double per_run = generated / double(state.iterations());
  state.counters["tok_per_s"] = benchmark::Counter(generated, benchmark::Counter::kIsRate);
  state.counters["passes_per_tok"] = double(counts.forward_passes - 1) / per_run;  // decode passes (prefill aside)
  state.counters["rows_per_tok"] = double(counts.forward_passes - 1 + counts.proposed) / per_run;
  state.counters["kept_of_proposed"] = counts.proposed > 0 ? double(counts.accepted) / double(counts.proposed) : 0.0;
  openblas_set_num_threads(blas_threads_before);
}

// A synthetic model of stories15M's shape (dim 288, 6 layers, 6 heads,
// hidden 768, vocab 32000, context 256), prompt of 8 fixed tokens.
void bm_decode_synthetic_stories15M(benchmark::State& state) {
  static const ModelWeights weights = astrai::make_synthetic_weights(astrai::preset_config("stories15M"), 15);
  run_decode(state, weights, {1, 9038, 2501, 263, 931, 29892, 727, 471});
}

}  // namespace

BENCHMARK_CAPTURE(bm_linear, stories15M_attn_288x288, 288, 288)->Arg(1)->Arg(16)->UseRealTime();
BENCHMARK_CAPTURE(bm_linear, stories15M_ffn_up_768x288, 768, 288)->Arg(1)->Arg(16)->UseRealTime();
BENCHMARK_CAPTURE(bm_linear, stories15M_ffn_down_288x768, 288, 768)->Arg(1)->Arg(16)->UseRealTime();
BENCHMARK_CAPTURE(bm_linear, stories15M_classifier_32000x288, 32000, 288)->Arg(1)->Arg(16)->UseRealTime();
BENCHMARK_CAPTURE(bm_linear, llama7b_attn_4096x4096, 4096, 4096)->Arg(1)->Arg(16)->UseRealTime();
BENCHMARK_CAPTURE(bm_linear, llama7b_ffn_up_11008x4096, 11008, 4096)->Arg(1)->Arg(16)->UseRealTime()
    ->Unit(benchmark::kMillisecond);

BENCHMARK_CAPTURE(bm_rmsnorm, stories15M_288, 288)->Arg(1)->Arg(16)->UseRealTime();
BENCHMARK_CAPTURE(bm_rmsnorm, llama7b_4096, 4096)->Arg(1)->Arg(16)->UseRealTime();

BENCHMARK_CAPTURE(bm_rope, stories15M_6x48, kStories15M)->Arg(1)->Arg(16)->UseRealTime();
BENCHMARK_CAPTURE(bm_rope, llama7b_32x128, kLlama7B)->Arg(1)->Arg(16)->UseRealTime();

BENCHMARK_CAPTURE(bm_attention, stories15M_6x48, kStories15M)->Arg(64)->Arg(256)->UseRealTime();
BENCHMARK_CAPTURE(bm_attention, llama7b_32x128, kLlama7B)->Arg(64)->Arg(256)->UseRealTime();

BENCHMARK_CAPTURE(bm_swiglu, stories15M_288_768, kStories15M)->Arg(1)->Arg(16)->UseRealTime();
BENCHMARK_CAPTURE(bm_swiglu, llama7b_4096_11008, kLlama7B)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);

// One token from one logits row with the reference sampler (a fresh row of
// uniform logits in [-5, 5], the same every run): greedy; temperature 0.7,
// top-k 50, top-p 0.9; and temperature 0.7, top-p 0.9 with top-k off (the
// nucleus over the whole vocabulary). Arg: the vocabulary (Llama 2's 32,000,
// Llama 3's 128,256).
void bm_sample(benchmark::State& state, float temperature, int top_k) {
  const size_t vocab = size_t(state.range(0));
  std::vector<float> logits(vocab);
  uint64_t seed = 7;
  for (float& x : logits) x = float(astrai::splitmix64_next(seed) >> 40) / 16777216.0f * 10.0f - 5.0f;
  const astrai::SamplingParams params{temperature, top_k, temperature == 0.0f ? 1.0f : 0.9f, 1};
  astrai::Rng rng(1);
  for (auto _ : state) benchmark::DoNotOptimize(astrai::sample(logits, params, rng));
}
BENCHMARK_CAPTURE(bm_sample, greedy, 0.0f, 50)->Arg(32000)->Arg(128256)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(bm_sample, t0.7_k50_p0.9, 0.7f, 50)->Arg(32000)->Arg(128256)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(bm_sample, t0.7_k0_p0.9, 0.7f, 0)->Arg(32000)->Arg(128256)->Unit(benchmark::kMicrosecond);

// Args: {generated tokens, OpenBLAS threads (0 = default)}.
BENCHMARK(bm_decode_stories260K)
    ->ArgNames({"tokens", "blas_threads"})
    ->Args({256, 0})
    ->Args({256, 1})
    ->Args({256, 2})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
// Arg: speculate (0 = off, 1 = n-gram); the two run side by side.
BENCHMARK(bm_speculative_stories260K)->ArgName("ngram")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(bm_decode_synthetic_stories15M)
    ->ArgNames({"tokens", "blas_threads"})
    ->Args({248, 0})
    ->Args({248, 1})
    ->Args({248, 2})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
