// The decode step at the reference shapes: see reference_decode_step.h.
#include "bench/reference_decode_step.h"

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_executor.h"
#include "cuda/device_page_cache.h"
#include "cuda/device_weights.h"
#include "bench/quantized_model.h"
#include "cuda/perf_model/weight_formats.h"
#include "reference/sampling/sampler.h"

namespace astrai::bench {
namespace {

using cuda::DType;

// "bf16", "q4_k_m", "q8_0": the weights' name in benchmark and report names.
std::string lower_name(cuda::perf::Weights weights) {
  std::string name = cuda::perf::weights_name(weights);
  for (char& ch : name) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return name;
}

// The performance report's estimate of this step (bench/perf-report.sh
// writes bench/perf-predictions.json; docs/cuda-performance.md), so the
// measured time prints beside the prediction; 0 when there is none.
// The report names the steps "8b-b1-c1k" (bf16) and "8b-q4_k_m-b1-c1k".
double predicted_ms(cuda::perf::Weights weights, int batch, int context) {
  std::ifstream in(std::string(ASTRAI_SOURCE_ROOT) + "/bench/perf-predictions.json");
  if (!in) return 0.0;
  try {
    const auto json = nlohmann::json::parse(in);
    const std::string format = weights == cuda::perf::Weights::BF16 ? "" : lower_name(weights) + "-";
    const std::string name =
        "8b-" + format + "b" + std::to_string(batch) + "-c" + std::to_string(context / 1024) + "k";
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

// Bytes of the bf16 KV cache one decode step reads (see the counters above).
double kv_step_bytes(const ModelConfig& c, int batch, int context) {
  return 2.0 * c.n_layers * double(batch) * context * c.kv_dim() * 2.0;
}

std::vector<std::string> g_table;  // "decode_step ..." lines, printed after the run
int g_decode_errors = 0;

// A model the steps run, made by the first benchmark that needs it and
// released at the end of main() (not by static destruction, which may run
// after the CUDA runtime has shut down); the host's copy of its weights is
// dropped once they are on the device.
struct StepModel {
  std::unique_ptr<cuda::CudaExecutor> executor;
  // Bytes a step of `batch` rows reads of the weights (the KV cache apart):
  // every matrix and norm once, plus `batch` rows of the embedding.
  double fixed_bytes = 0.0, bytes_per_row = 0.0;
  double weight_bytes(int batch) const { return fixed_bytes + bytes_per_row * batch; }
};
std::map<cuda::perf::Weights, StepModel> g_models;

// The shape the decode-step benchmark runs: Llama-3-8B on a GPU; on the
// emulated device a small model of the same proportions (GQA 4:1, RotateHalf,
// θ 500,000), which checks the benchmark's own path, not any speed.
ModelConfig reference_config() {
  if (!cuda_is_emulated()) return llama3_8b_config();
  return ModelConfig{.dim = 256, .hidden_dim = 896, .n_layers = 2, .n_heads = 4, .n_kv_heads = 1,
                     .vocab_size = 2000, .max_seq_len = 512, .rope_theta = 500000.0f,
                     .rope_layout = RopeLayout::RotateHalf};
}

// The model at `weights`: bf16 random weights, or random blocks in the
// formats a llama.cpp preset gives each matrix (quantized_model.h). The
// emulated device's small shape is widened to whole 256-weight blocks when
// quantized.
StepModel& step_model(cuda::perf::Weights weights) {
  StepModel& m = g_models[weights];
  if (m.executor) return m;
  ModelConfig c = reference_config();
  if (weights != cuda::perf::Weights::BF16 && cuda_is_emulated()) c.hidden_dim = 1024;
  const auto t0 = std::chrono::steady_clock::now();
  const CudaOptions options{DType::BFloat16, 0, true};
  double made_s = 0.0;
  if (weights == cuda::perf::Weights::BF16) {
    const auto w = random_weights_fast(c);
    made_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    m.executor = std::make_unique<cuda::CudaExecutor>(*w, options);
    m.fixed_bytes = double(cuda::DeviceWeights::bytes_needed(c, DType::BFloat16)) - 2.0 * double(c.vocab_size) * c.dim;
    m.bytes_per_row = 2.0 * c.dim;
  } else {
    const QuantizedModel q = random_quantized_model(c, weights);  // host blocks, freed once uploaded
    made_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    m.executor = std::make_unique<cuda::CudaExecutor>(q.source(), options);
    m.fixed_bytes = q.step_weight_bytes(0);
    m.bytes_per_row = q.step_weight_bytes(1) - m.fixed_bytes;
  }
  std::printf("reference shape (%s): %s; random weights %.1f s, on the device %.1f s; %s\n",
              cuda::perf::weights_name(weights).c_str(), c.describe().c_str(), made_s,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() - made_s,
              m.executor->weights_description().c_str());
  return m;
}

void reference_decode_step(benchmark::State& state, cuda::perf::Weights weights, int batch, int context) {
  StepModel& model = step_model(weights);
  cuda::CudaExecutor* executor = model.executor.get();
  const ModelConfig c = executor->config();
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
  const double bytes = model.weight_bytes(batch) + kv_step_bytes(c, batch, context);
  const auto [peak, peak_source] = peak_bandwidth_gbps();
  const double floor_ms = bytes / 1e9 / peak * 1e3;
  state.counters["ms"] = ms;
  state.counters["GB"] = bytes / 1e9;
  state.counters["GB/s"] = bytes / 1e9 / (ms / 1e3);
  state.counters["peak_GB/s"] = peak;
  state.counters["floor_ms"] = floor_ms;
  state.counters["floor_frac"] = floor_ms / ms;
  state.counters["tokens/s"] = batch / (ms / 1e3);
  const double predicted = predicted_ms(weights, batch, context);
  state.counters["predicted_ms"] = predicted;  // the performance report's estimate, 0: none for this shape
  char line[320];
  std::snprintf(line, sizeof line,
                "decode_step %-6s batch %-3d context %-5d %8.3f ms %7.2f GB %7.0f GB/s  floor %.3f ms (%.0f GB/s: %s)  "
                "%.2f of floor  predicted %.3f ms",
                cuda::perf::weights_name(weights).c_str(), batch, context, ms, bytes / 1e9, bytes / 1e9 / (ms / 1e3),
                floor_ms, peak, peak_source.c_str(), floor_ms / ms, predicted);
  g_table.push_back(line);
}

}  // namespace

void register_reference_decode_steps() {
  // On the emulated device (16 GB of weights is not for it) a small model
  // at small shapes, batch 5 padded to 8.
  const bool emulated = cuda_is_emulated();
  const std::string model = emulated ? "emulated_small" : "llama3_8b";
  struct Step {
    cuda::perf::Weights weights;
    int batch, context;
  };
  using W = cuda::perf::Weights;
  const std::vector<Step> steps =
      emulated ? std::vector<Step>{{W::BF16, 1, 64}, {W::BF16, 5, 64}, {W::Q4_K_M, 1, 64}, {W::Q8_0, 1, 64}}
               : std::vector<Step>{{W::BF16, 1, 1024}, {W::BF16, 64, 2048}, {W::Q4_K_M, 1, 1024}, {W::Q8_0, 1, 1024}};
  for (const Step& s : steps) {
    benchmark::RegisterBenchmark(("decode_step/" + model + "_" + lower_name(s.weights) + "/batch:" + std::to_string(s.batch) +
                                  "/context:" + std::to_string(s.context)).c_str(),
                                 [s](benchmark::State& state) {
                                   reference_decode_step(state, s.weights, s.batch, s.context);
                                 })
        ->UseManualTime()
        ->Iterations(emulated ? 3 : 20)
        ->Unit(benchmark::kMillisecond);
  }
}

int finish_reference_decode_steps() {
  g_models.clear();
  for (const std::string& line : g_table) std::printf("%s\n", line.c_str());
  if (g_decode_errors > 0) std::printf("FAILED: %d decode-step benchmarks (above)\n", g_decode_errors);
  return g_decode_errors;
}

}  // namespace astrai::bench
