// The decode step at the reference shapes: see reference_decode_step.h.
#include "bench/reference_decode_step.h"

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_executor.h"
#include "cuda/device_page_cache.h"
#include "cuda/device_weights.h"
#include "reference/sampling/sampler.h"

namespace astrai::bench {
namespace {

using cuda::DType;

// The performance report's estimate of this step (bench/perf-report.sh
// writes bench/perf-predictions.json; docs/cuda-performance.md), so the
// measured time prints beside the prediction; 0 when there is none.
double predicted_ms(int batch, int context) {
  std::ifstream in(std::string(ASTRAI_SOURCE_ROOT) + "/bench/perf-predictions.json");
  if (!in) return 0.0;
  try {
    const auto json = nlohmann::json::parse(in);
    const std::string name = "8b-b" + std::to_string(batch) + "-c" + std::to_string(context / 1024) + "k";
    for (const auto& step : json.at("steps"))
      if (step.at("shape") == name) return double(step.at("estimated_s")) * 1e3;
  } catch (const std::exception&) {
  }
  return 0.0;
}

ModelConfig llama3_8b_config() {
  return ModelConfig{.dim = 4096, .hidden_dim = 14336, .n_layers = 32, .n_heads = 32, .n_kv_heads = 8,
                     .vocab_size = 128256, .max_seq_len = 8192, .rope_theta = 500000.0f,
                     .rope_layout = RopeLayout::RotateHalf};
}

// Random weights of `c`'s shape, filled by every core (make_synthetic_weights
// is one thread: minutes for 8 billion values). Uniform in +-sqrt(3 / fan-in)
// as make_synthetic_weights, norms near 1, so activations stay finite and no
// row falls back to the host sampler.
std::shared_ptr<ModelWeights> random_weights_fast(const ModelConfig& c) {
  auto w = std::make_shared<ModelWeights>();
  w->config = c;
  struct Fill {
    float* data;
    size_t n;
    float lo, hi;
  };
  std::vector<Fill> fills;
  const auto matrix = [&](xt::xtensor<float, 2>& m, int rows, int cols, float scale) {
    m = xt::xtensor<float, 2>::from_shape({size_t(rows), size_t(cols)});
    const float a = scale * std::sqrt(3.0f / float(cols));
    fills.push_back({m.data(), m.size(), -a, a});
  };
  const auto vector = [&](xt::xtensor<float, 1>& v, int n) {
    v = xt::xtensor<float, 1>::from_shape({size_t(n)});
    fills.push_back({v.data(), v.size(), 0.9f, 1.1f});
  };
  matrix(w->token_embedding, c.vocab_size, c.dim, std::sqrt(float(c.dim)));
  w->layers.resize(size_t(c.n_layers));
  for (LayerWeights& L : w->layers) {
    vector(L.attn_norm, c.dim);
    matrix(L.wq, c.q_dim(), c.dim, 1.0f);
    matrix(L.wk, c.kv_dim(), c.dim, 1.0f);
    matrix(L.wv, c.kv_dim(), c.dim, 1.0f);
    matrix(L.wo, c.dim, c.q_dim(), 1.0f);
    vector(L.ffn_norm, c.dim);
    matrix(L.w_gate, c.hidden_dim, c.dim, 1.0f);
    matrix(L.w_down, c.dim, c.hidden_dim, 1.0f);
    matrix(L.w_up, c.hidden_dim, c.dim, 1.0f);
  }
  vector(w->final_norm, c.dim);
  matrix(w->classifier, c.vocab_size, c.dim, 1.0f);
  // Chunks of 2^22 values, each from its own splitmix64 stream.
  const size_t chunk = size_t(1) << 22;
  std::vector<std::pair<size_t, size_t>> work;  // (fill, first value)
  for (size_t f = 0; f < fills.size(); ++f)
    for (size_t at = 0; at < fills[f].n; at += chunk) work.push_back({f, at});
  std::atomic<size_t> next{0};
  const auto worker = [&] {
    for (size_t i; (i = next++) < work.size();) {
      const Fill& f = fills[work[i].first];
      uint64_t state = 0x9E3779B97F4A7C15ull * (i + 1);
      const size_t end = std::min(f.n, work[i].second + chunk);
      for (size_t k = work[i].second; k < end; ++k) {
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        f.data[k] = f.lo + (f.hi - f.lo) * float(double(z >> 40) * 0x1.0p-24);
      }
    }
  };
  std::vector<std::thread> threads(std::max(1u, std::thread::hardware_concurrency()));
  for (auto& t : threads) t = std::thread(worker);
  for (auto& t : threads) t.join();
  return w;
}

// The device's peak memory bandwidth in GB/s (DDR: two transfers a clock),
// and where the figure came from.
std::pair<double, std::string> peak_bandwidth_gbps() {
#ifdef ASTRAI_CUDA_EMULATED  // no memory clock to report (nor cudaDeviceGetAttribute)
  return {4800.0, "H200 nominal (the emulated device has no memory clock)"};
#else
  // CUDA 13's cudaDeviceProp has no memory clock any more; the attribute does.
  int device = 0, clock_khz = 0, bus_bits = 0;
  cudaGetDevice(&device);
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device) == cudaSuccess &&
      cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device) == cudaSuccess && clock_khz > 0 &&
      bus_bits > 0)
    return {2.0 * double(clock_khz) * 1e3 * double(bus_bits) / 8.0 / 1e9,
            "2 x " + std::to_string(clock_khz / 1000) + " MHz x " + std::to_string(bus_bits) + " bits / 8"};
  cudaGetLastError();
  return {4800.0, "H200 nominal (the device reports no memory clock)"};
#endif
}

// Bytes one decode step must move (see the counters above).
double decode_step_bytes(const ModelConfig& c, int batch, int context) {
  const double es = 2.0;  // bf16
  const double weights = double(cuda::DeviceWeights::bytes_needed(c, DType::BFloat16)) -
                         double(c.vocab_size) * c.dim * es + double(batch) * c.dim * es;
  const double kv = 2.0 * c.n_layers * double(batch) * context * c.kv_dim() * es;
  return weights + kv;
}

std::vector<std::string> g_table;  // "decode_step ..." lines, printed after the run
int g_decode_errors = 0;
// The reference-shape model, made by the first benchmark that needs it and
// released at the end of main() (not by static destruction, which may run
// after the CUDA runtime has shut down).
std::shared_ptr<ModelWeights> g_reference_weights;
std::unique_ptr<cuda::CudaExecutor> g_reference_executor;

// The shape the decode-step benchmark runs: Llama-3-8B on a GPU; on the
// emulated device a small model of the same proportions (GQA 4:1, RotateHalf,
// θ 500,000), which checks the benchmark's own path, not any speed.
ModelConfig reference_config() {
  if (!cuda_is_emulated()) return llama3_8b_config();
  return ModelConfig{.dim = 256, .hidden_dim = 896, .n_layers = 2, .n_heads = 4, .n_kv_heads = 1,
                     .vocab_size = 2000, .max_seq_len = 512, .rope_theta = 500000.0f,
                     .rope_layout = RopeLayout::RotateHalf};
}

void reference_decode_step(benchmark::State& state, int batch, int context) {
  const ModelConfig c = reference_config();
  std::unique_ptr<cuda::CudaExecutor>& executor = g_reference_executor;
  if (!executor) {
    const auto t0 = std::chrono::steady_clock::now();
    g_reference_weights = random_weights_fast(c);
    const auto t1 = std::chrono::steady_clock::now();
    executor = std::make_unique<cuda::CudaExecutor>(*g_reference_weights, CudaOptions{DType::BFloat16, 0, true});
    std::printf("reference shape: %s; random weights %.1f s, on the device %.1f s\n", c.describe().c_str(),
                std::chrono::duration<double>(t1 - t0).count(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count());
  }
  const int page = 16;
  const int n_pages = batch * (context / page + 2);
  cuda::DevicePageCache cache(c, n_pages, page, DType::BFloat16);
  // Zero K/V (a fresh GPU allocation holds anything, NaN included): attention
  // reads every position all the same.
  const size_t layer_bytes = size_t(n_pages) * page * size_t(c.kv_dim()) * 2;
  for (int l = 0; l < c.n_layers; ++l) {
    ASTRAI_CUDA_CHECK(cudaMemset(cache.layer_keys(l), 0, layer_bytes));
    ASTRAI_CUDA_CHECK(cudaMemset(cache.layer_values(l), 0, layer_bytes));
  }
  std::vector<BatchToken> rows;
  for (int s = 0; s < batch; ++s) {
    if (!cache.admit(s, std::vector<int>(size_t(context) + 1, 1 + s)).has_value()) {
      state.SkipWithError("the KV cache does not hold the batch");
      ++g_decode_errors;
      return;
    }
    rows.push_back({1 + s, s, context, true});  // the step at position `context` reads `context` earlier positions
  }
  // A chat setting, seeded: temperature 0.7, top-k 50, top-p 0.9.
  std::vector<SamplerState> states;
  for (int s = 0; s < batch; ++s) states.emplace_back(SamplingParams{0.7f, 50, 0.9f, uint64_t(s + 1)});
  const auto step = [&] {
    std::vector<RowSampling> rules;
    for (SamplerState& st : states) rules.push_back({st.params(), st.next_uniform()});
    const auto tokens = executor->forward_and_sample(rows, cache.view(), rules);
    benchmark::DoNotOptimize(tokens.data());
  };
  for (int i = 0; i < 3; ++i) step();  // eager, captured, replayed
  const long replays_before = executor->graph_replays();
  double total_ms = 0.0;
  long steps = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(ms / 1e3);
    total_ms += ms;
    ++steps;
  }
  if (executor->graph_replays() - replays_before != steps) {
    state.SkipWithError("a step did not replay its graph");
    ++g_decode_errors;
    return;
  }
  const double ms = total_ms / double(std::max(steps, 1L));
  const double bytes = decode_step_bytes(c, batch, context);
  const auto [peak, peak_source] = peak_bandwidth_gbps();
  const double floor_ms = bytes / 1e9 / peak * 1e3;
  state.counters["ms"] = ms;
  state.counters["GB"] = bytes / 1e9;
  state.counters["GB/s"] = bytes / 1e9 / (ms / 1e3);
  state.counters["peak_GB/s"] = peak;
  state.counters["floor_ms"] = floor_ms;
  state.counters["floor_frac"] = floor_ms / ms;
  state.counters["tokens/s"] = batch / (ms / 1e3);
  const double predicted = predicted_ms(batch, context);
  state.counters["predicted_ms"] = predicted;  // the performance report's estimate, 0: none for this shape
  char line[320];
  std::snprintf(line, sizeof line,
                "decode_step batch %-3d context %-5d %8.3f ms %7.2f GB %7.0f GB/s  floor %.3f ms (%.0f GB/s: %s)  %.2f of "
                "floor  predicted %.3f ms",
                batch, context, ms, bytes / 1e9, bytes / 1e9 / (ms / 1e3), floor_ms, peak, peak_source.c_str(),
                floor_ms / ms, predicted);
  g_table.push_back(line);
}

}  // namespace

void register_reference_decode_steps() {
  // On the emulated device (16 GB of weights is not for it) a small model
  // at small shapes, batch 5 padded to 8.
  const bool emulated = cuda_is_emulated();
  const std::string model = emulated ? "emulated_small_bf16" : "llama3_8b_bf16";
  const std::vector<std::pair<int, int>> shapes = emulated ? std::vector<std::pair<int, int>>{{1, 64}, {5, 64}}
                                                           : std::vector<std::pair<int, int>>{{1, 1024}, {64, 2048}};
  for (const auto& [batch, context] : shapes)
    benchmark::RegisterBenchmark(("decode_step/" + model + "/batch:" + std::to_string(batch) +
                                  "/context:" + std::to_string(context)).c_str(),
                                 [batch, context](benchmark::State& state) {
                                   reference_decode_step(state, batch, context);
                                 })
        ->UseManualTime()
        ->Iterations(emulated ? 3 : 20)
        ->Unit(benchmark::kMillisecond);
}

int finish_reference_decode_steps() {
  g_reference_executor.reset();
  g_reference_weights.reset();
  for (const std::string& line : g_table) std::printf("%s\n", line.c_str());
  if (g_decode_errors > 0) std::printf("FAILED: %d decode-step benchmarks (above)\n", g_decode_errors);
  return g_decode_errors;
}

}  // namespace astrai::bench
