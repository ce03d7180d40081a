// Speed of the CUDA backend against the device's own measured ceilings.
// First the ceilings: device-to-device copy bandwidth (cudaMemcpy, bytes read
// plus bytes written per second) and the bf16 GEMM rate of cuBLASLt on a large
// square product. Then each benchmark reports, besides its time:
//   GB/s and bw_frac  = bytes it must move / time, over the copy bandwidth
//                       (decode attention and the decode step are memory-bound)
//   TFLOP/s and flop_frac = its arithmetic / time, over the GEMM rate
// Times are GPU times between CUDA events (manual timing), one launch each.
// bench/gpu-check.sh runs this and prints a table of the counters.
//
// The kernels come from the kernel-case registry (cuda/kernel_cases/), as in
// llm.c: each variant of each case is first validated against its reference
// on one small shape (a wrong kernel is reported and not timed), then timed
// on the case's bench_shapes. The whole-model decode steps follow: a small
// model (bench_model_config(), which bench/torch_compare.py rebuilds for its
// comparison) and the reference shapes (decode_step/..., below).
//
// ASTRAI_BENCH=kernels|decode|all (default all) picks what is registered:
// bench/gpu-check.sh runs the two halves as separate steps with their own
// time limits.
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_executor.h"
#include "cuda/device_buffer.h"
#include "cuda/device_page_cache.h"
#include "cuda/device_weights.h"
#include "cuda/gemm.h"
#include "cuda/kernel_cases/device_arrays.h"
#include "cuda/kernel_cases/kernel_case.h"
#include "cuda/kernels/kernels.h"
#include "reference/sampling/sampler.h"
#include "reference/synthetic_model.h"

namespace {

using namespace astrai;
using cuda::DeviceBuffer;
using cuda::DType;

double g_copy_gbps = 0.0;   // measured device-to-device copy bandwidth
double g_gemm_tflops = 0.0; // measured bf16 GEMM rate

// Milliseconds of GPU time `work` takes (after one warm-up run).
template <typename Work>
float gpu_ms(Work&& work) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  work();
  cudaEventRecord(start);
  work();
  cudaEventRecord(stop);
  cudaEventSynchronize(stop);
  float ms = 0.0f;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms;
}

void report(benchmark::State& state, float ms, double bytes, double flops) {
  state.SetIterationTime(double(ms) / 1e3);
  const double seconds = double(ms) / 1e3;
  state.counters["GB/s"] = bytes / seconds / 1e9;
  state.counters["TFLOP/s"] = flops / seconds / 1e12;
  if (g_copy_gbps > 0) state.counters["bw_frac"] = bytes / seconds / 1e9 / g_copy_gbps;
  if (g_gemm_tflops > 0) state.counters["flop_frac"] = flops / seconds / 1e12 / g_gemm_tflops;
}

void measure_ceilings() {
  const size_t bytes = size_t(1) << 30;
  DeviceBuffer a(bytes, "copy source"), b(bytes, "copy target");
  const float ms = gpu_ms([&] { cudaMemcpy(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice); });
  g_copy_gbps = 2.0 * double(bytes) / (double(ms) / 1e3) / 1e9;
  cuda::GemmRunner gemm;
  const int n = 8192;
  DeviceBuffer x(size_t(n) * n * 2, "gemm x"), w(size_t(n) * n * 2, "gemm w"), y(size_t(n) * n * 4, "gemm y");
  cudaMemset(x.get(), 0, x.bytes());
  cudaMemset(w.get(), 0, w.bytes());
  const float gms = gpu_ms([&] { gemm.run(x.get(), w.get(), DType::BFloat16, n, n, n, y.as<float>(), nullptr); });
  g_gemm_tflops = 2.0 * double(n) * n * n / (double(gms) / 1e3) / 1e12;
  std::printf("ceilings: device-to-device copy %.0f GB/s, bf16 GEMM %.0f TFLOP/s (%s)\n", g_copy_gbps,
              g_gemm_tflops, cuda_device_description().c_str());
}

// The decode step of a whole model (bench_model_config(), bf16): `batch`
// sequences at position `ctx`, as the engine runs it (CUDA graph replay).
// Bytes moved: every weight once plus each sequence's K/V.
ModelConfig bench_model_config() {
  // RotateHalf as Hugging Face Llama, for the PyTorch comparison.
  return ModelConfig{.dim = 2048, .hidden_dim = 5632, .n_layers = 8, .n_heads = 32, .n_kv_heads = 8,
                     .vocab_size = 32000, .max_seq_len = 2048, .rope_layout = RopeLayout::RotateHalf};
}

void BM_DecodeStep(benchmark::State& state) {
  const int batch = int(state.range(0)), ctx = int(state.range(1));
  static const auto weights = std::make_shared<ModelWeights>(make_synthetic_weights(bench_model_config(), 1));
  const ModelConfig& c = weights->config;
  cuda::CudaExecutor executor(weights, {DType::BFloat16, 0, true});
  const int page = 16;
  cuda::DevicePageCache cache(c, batch * (ctx / page + 2), page, DType::BFloat16);
  std::vector<BatchToken> rows;
  for (int s = 0; s < batch; ++s) {
    cache.admit(s, std::vector<int>(size_t(ctx) + 1, 1));
    rows.push_back({1, s, ctx, true});
  }
  for (int i = 0; i < 3; ++i) executor.forward(rows, cache.view());  // eager, capture, replay
  for (auto _ : state) {
    const float ms = gpu_ms([&] { executor.forward(rows, cache.view()); });
    const double bytes = double(c.n_layers) * (double(c.dim) * (c.q_dim() + 2 * c.kv_dim()) + double(c.dim) * c.q_dim() +
                                               3.0 * c.dim * c.hidden_dim) * 2 +
                         double(c.vocab_size) * c.dim * 2 +
                         2.0 * c.n_layers * batch * double(ctx) * c.kv_dim() * 2;
    const double flops = 2.0 * batch * double(cuda::DeviceWeights::bytes_needed(c, DType::BFloat16)) / 2.0;
    report(state, ms, bytes, flops);
    state.counters["tokens/s"] = batch / (double(ms) / 1e3);
  }
}

// ---------------------------------------------------------------------------
// The decode step at the reference shapes (issue 25): Llama-3-8B in bf16 on
// one GPU, with synthetic random weights of the real shape (32 layers, dim
// 4096, ffn 14336, 32 query / 8 KV heads of 128, vocabulary 128,256: 16.1 GB
// on the device), as the engine runs it: forward_and_sample() replaying the
// step's CUDA graph (metadata upload, forward pass, sampling, tokens back),
// host work included, wall time of the synchronous call.
//
// Stable interface (the performance report adds a predicted time per name):
//   name      decode_step/llama3_8b_bf16/batch:B/context:C (Google Benchmark
//             appends /iterations:20/manual_time)
//   counters  ms          mean wall time of one step
//             GB          bytes the step must move: every weight it reads
//                         once (all but the embedding table, of which it
//                         reads B rows) plus the K/V of B sequences at
//                         context C (2 x n_layers x C x kv_dim x 2 B each)
//             GB/s        GB / ms
//             peak_GB/s   the device's memory bandwidth: 2 x memory clock x
//                         bus width / 8 from the device attributes, else
//                         4,800 (H200)
//             floor_ms    GB / peak_GB/s: the time no kernel can beat
//             floor_frac  floor_ms / ms (1.0 = at the memory limit)
//   table     one line per shape starting "decode_step " (gpu-check.sh's table)
// ---------------------------------------------------------------------------

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
int g_decode_errors = 0;            // SkipWithError does not change the exit status; main() does
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
    executor = std::make_unique<cuda::CudaExecutor>(g_reference_weights, CudaOptions{DType::BFloat16, 0, true});
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
  char line[256];
  std::snprintf(line, sizeof line, "decode_step batch %-3d context %-5d %8.3f ms %7.2f GB %7.0f GB/s  floor %.3f ms (%.0f GB/s: %s)  %.2f of floor",
                batch, context, ms, bytes / 1e9, bytes / 1e9 / (ms / 1e3), floor_ms, peak, peak_source.c_str(),
                floor_ms / ms);
  g_table.push_back(line);
}

void register_decode_benchmarks() {
  BENCHMARK(BM_DecodeStep)->Args({1, 512})->Args({8, 512})->Args({32, 512})->UseManualTime()->Iterations(5);
  // The reference shapes; on the emulated device (16 GB of weights is not
  // for it) a small model at small shapes, batch 5 padded to 8.
  const bool emulated = cuda_is_emulated();
  const std::string model = emulated ? "emulated_small_bf16" : "llama3_8b_bf16";
  const std::vector<std::pair<int, int>> shapes =
      emulated ? std::vector<std::pair<int, int>>{{1, 64}, {5, 64}} : std::vector<std::pair<int, int>>{{1, 1024}, {64, 2048}};
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

// Validates every variant of every case on one small drawn shape and
// registers the valid ones' benchmarks. Returns the number of invalid ones.
int register_kernel_cases() {
  int invalid = 0;
  for (const cuda::cases::KernelCase& kc : cuda::cases::kernel_cases()) {
    for (int variant = 1; variant <= kc.variants; ++variant) {
      std::mt19937 rng(20261201);
      const cuda::cases::Pick pick = [&rng](int lo, int hi) {
        return lo + int(rng() % uint32_t(hi - lo + 1));
      };
      const cuda::cases::KernelShape small = kc.draw(pick);
      auto check = kc.prepare(small);
      check->launch(variant, nullptr);
      const std::string error = test::compare(check->result(), check->expected(), kc.tolerance(small.dtype));
      const std::string name = kc.name + "/v" + std::to_string(variant);
      if (!error.empty()) {
        std::printf("INVALID %s on %s: %s (not timed)\n", name.c_str(), small.describe().c_str(), error.c_str());
        ++invalid;
        continue;
      }
      std::printf("validated %s against %s on %s\n", name.c_str(), kc.reference.c_str(), small.describe().c_str());
      for (const cuda::cases::KernelShape& shape : kc.bench_shapes) {
        benchmark::RegisterBenchmark((name + "/" + shape.describe()).c_str(),
                                     [&kc, variant, shape](benchmark::State& state) {
                                       auto run = kc.prepare(shape);
                                       for (auto _ : state) {
                                         const float ms = gpu_ms([&] { run->launch(variant, nullptr); });
                                         report(state, ms, run->bytes, run->flops);
                                       }
                                     })
            ->UseManualTime()
            ->Iterations(5);
      }
    }
  }
  return invalid;
}

}  // namespace

int main(int argc, char** argv) {
  std::string why;
  if (!cuda_available(&why)) {
    std::printf("SKIPPED: %s\n", why.c_str());
    // On a machine that has a GPU (ASTRAI_EXPECT_GPU=1, as bench/gpu-check.sh
    // sets it) a benchmark that cannot run is a failure, not a skip.
    const char* expected = std::getenv("ASTRAI_EXPECT_GPU");
    return expected && std::string(expected) == "1" ? 1 : 0;
  }
  const char* mode_env = std::getenv("ASTRAI_BENCH");
  const std::string mode = mode_env && *mode_env ? mode_env : "all";
  if (mode != "all" && mode != "kernels" && mode != "decode") {
    std::printf("ASTRAI_BENCH=%s: expected kernels, decode or all\n", mode.c_str());
    return 2;
  }
  if (!cuda_is_emulated()) measure_ceilings();  // an 8192^3 GEMM on the CPU would take hours
  const int invalid = mode == "decode" ? 0 : register_kernel_cases();
  if (mode != "kernels") register_decode_benchmarks();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  g_reference_executor.reset();
  g_reference_weights.reset();
  for (const std::string& line : g_table) std::printf("%s\n", line.c_str());
  if (g_decode_errors > 0) std::printf("FAILED: %d decode-step benchmarks (above)\n", g_decode_errors);
  return invalid == 0 && g_decode_errors == 0 ? 0 : 1;
}
