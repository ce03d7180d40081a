// Speed of the CUDA backend against the device's own measured ceilings.
// First the ceilings: device-to-device copy bandwidth (cudaMemcpy, bytes read
// plus bytes written per second) and the bf16 GEMM rate of cuBLASLt on a large
// square product. Then each benchmark reports, besides its time:
//   GB/s and bw_frac  = bytes it must move / time, over the copy bandwidth
//                       (decode attention and the decode step are memory-bound)
//   TFLOP/s and flop_frac = its arithmetic / time, over the GEMM rate
// Times are GPU times between CUDA events (manual timing); a kernel case's is
// the median of 15 launches, each timed alone after an L2 flush.
// bench/gpu-check.sh runs this and prints a table of the counters.
//
// The kernels come from the kernel-case registry (cuda/kernel_cases/), as in
// llm.c: each variant of each case is first validated against its reference
// on one small shape (a wrong kernel is reported and not timed), then timed
// on the case's bench_shapes. The whole-model decode steps follow: a small
// model (bench_model_config(), which bench/torch_compare.py rebuilds for its
// comparison) and the reference shapes (decode_step/...,
// bench/reference_decode_step.h).
//
// ASTRAI_BENCH=kernels|decode|all (default all) picks what is registered:
// bench/gpu-check.sh runs the two halves as separate steps with their own
// time limits.
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
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
#include "bench/reference_decode_step.h"
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

// The median over `launches` launches of `work`, each timed alone by its own
// pair of events with L2 flushed before it (a 256 MB write, outside the
// events: more than four times the H200's 60 MB of L2), so a weight is read
// from HBM as in a decode step, where the model is far larger than L2. One
// launch before them warms up the code.
template <typename Work>
float median_kernel_ms(Work&& work, int launches = 15) {
  static DeviceBuffer flush(size_t(256) << 20, "the L2 flush buffer");
  std::vector<cudaEvent_t> events(size_t(2 * launches));
  for (cudaEvent_t& e : events) cudaEventCreate(&e);
  work();
  for (int i = 0; i < launches; ++i) {
    cudaMemsetAsync(flush.get(), i & 0xff, flush.bytes());
    cudaEventRecord(events[size_t(2 * i)]);
    work();
    cudaEventRecord(events[size_t(2 * i + 1)]);
  }
  cudaEventSynchronize(events.back());
  std::vector<float> ms(size_t(launches), 0.0f);
  for (int i = 0; i < launches; ++i) cudaEventElapsedTime(&ms[size_t(i)], events[size_t(2 * i)], events[size_t(2 * i + 1)]);
  for (cudaEvent_t& e : events) cudaEventDestroy(e);
  std::nth_element(ms.begin(), ms.begin() + launches / 2, ms.end());
  return ms[size_t(launches / 2)];
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
  cuda::CudaExecutor executor(*weights, {DType::BFloat16, 0, true});
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

void register_decode_benchmarks() {
  BENCHMARK(BM_DecodeStep)->Args({1, 512})->Args({8, 512})->Args({32, 512})->UseManualTime()->Iterations(5);
  bench::register_reference_decode_steps();
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
      const std::string error = check->check(kc.tolerance(small.dtype));
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
                                       run->restore_inputs = false;  // time the kernel, not an upload
                                       for (auto _ : state) {
                                         const float ms = median_kernel_ms([&] { run->launch(variant, nullptr); });
                                         report(state, ms, run->bytes, run->flops);
                                       }
                                     })
            ->UseManualTime()
            ->Iterations(1);
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
  const int decode_errors = bench::finish_reference_decode_steps();
  return invalid == 0 && decode_errors == 0 ? 0 : 1;
}
