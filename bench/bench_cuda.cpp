// Speed of the CUDA backend against the device's own measured ceilings.
// First the ceilings: device-to-device copy bandwidth (cudaMemcpy, bytes read
// plus bytes written per second) and the bf16 GEMM rate of cuBLASLt on a large
// square product. Then each benchmark reports, besides its time:
//   GB/s and bw_frac  = bytes it must move / time, over the copy bandwidth
//                       (decode attention and the decode step are memory-bound)
//   TFLOP/s and flop_frac = its arithmetic / time, over the GEMM rate
// Times are GPU times between CUDA events (manual timing), one launch each.
// bench/gpu-check.sh runs this and prints a table of the counters.
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_executor.h"
#include "cuda/device_buffer.h"
#include "cuda/device_page_cache.h"
#include "cuda/device_weights.h"
#include "cuda/gemm.h"
#include "cuda/kernels/kernels.h"
#include "engine/model_files/synthetic_model.h"

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

// A Llama-7B-like attention layer: 32 query heads of 128, 8 KV heads (GQA 4).
ModelConfig attention_config(int ctx) {
  ModelConfig c = preset_config("llama2-7b");
  c.n_kv_heads = 8;
  c.max_seq_len = ctx;
  c.n_layers = 1;
  c.vocab_size = 16;
  return c;
}

// Decode attention: `batch` sequences of `ctx` cached positions, one query row each.
void BM_DecodeAttention(benchmark::State& state) {
  const int batch = int(state.range(0)), ctx = int(state.range(1)), page = 16;
  const ModelConfig c = attention_config(ctx);
  const int pps = ctx / page, splits = (ctx + 255) / 256;
  cuda::DevicePageCache cache(c, batch * pps, page, DType::BFloat16);
  cudaMemset(cache.layer_keys(0), 0, size_t(batch) * size_t(ctx) * size_t(c.kv_dim()) * 2);
  cudaMemset(cache.layer_values(0), 0, size_t(batch) * size_t(ctx) * size_t(c.kv_dim()) * 2);
  std::vector<int> tables(static_cast<size_t>(batch * pps)), rows(static_cast<size_t>(batch)),
      pos(static_cast<size_t>(batch), ctx - 1);
  for (size_t i = 0; i < tables.size(); ++i) tables[i] = int(i);
  for (int r = 0; r < batch; ++r) rows[size_t(r)] = r;
  DeviceBuffer d_tables(tables.size() * 4, "tables"), d_rows(rows.size() * 4, "rows"), d_pos(pos.size() * 4, "pos");
  cudaMemcpy(d_tables.get(), tables.data(), d_tables.bytes(), cudaMemcpyHostToDevice);
  cudaMemcpy(d_rows.get(), rows.data(), d_rows.bytes(), cudaMemcpyHostToDevice);
  cudaMemcpy(d_pos.get(), pos.data(), d_pos.bytes(), cudaMemcpyHostToDevice);
  DeviceBuffer q(size_t(batch) * size_t(c.q_dim()) * 4, "q"), out(size_t(batch) * size_t(c.q_dim()) * 2, "out");
  cudaMemset(q.get(), 0, q.bytes());
  DeviceBuffer o(size_t(batch) * size_t(c.n_heads * splits * c.head_dim()) * 4, "o_partial");
  DeviceBuffer lse(size_t(batch) * size_t(c.n_heads * splits) * 4, "lse");
  cuda::AttentionArgs a;
  a.q = q.as<float>();
  a.q_stride = c.q_dim();
  a.kv = cuda::KVLayer{cache.layer_keys(0), cache.layer_values(0), DType::BFloat16};
  a.page_size = page;
  a.page_tables = d_tables.as<int>();
  a.pages_per_seq = pps;
  a.row_seq = d_rows.as<int>();
  a.row_pos = d_pos.as<int>();
  a.n_heads = c.n_heads;
  a.n_kv_heads = c.n_kv_heads;
  a.head_dim = c.head_dim();
  a.split_len = 256;
  a.max_splits = splits;
  a.scale = 0.0883883f;
  a.o_partial = o.as<float>();
  a.lse_partial = lse.as<float>();
  const double bytes = 2.0 * batch * double(ctx) * c.kv_dim() * 2;  // K and V, bf16, read once
  const double flops = 4.0 * batch * double(ctx) * c.q_dim();
  for (auto _ : state) {
    const float ms = gpu_ms([&] {
      cuda::launch_decode_attention(a, d_rows.as<int>(), batch, nullptr);
      cuda::launch_attention_merge(a, batch, out.get(), DType::BFloat16, nullptr);
    });
    report(state, ms, bytes, flops);
  }
}
BENCHMARK(BM_DecodeAttention)->Args({1, 4096})->Args({16, 4096})->Args({64, 2048})->UseManualTime()->Iterations(5);

// Prefill attention: one prompt of `len` rows, causal.
void BM_PrefillAttention(benchmark::State& state) {
  const int len = int(state.range(0)), page = 16;
  const ModelConfig c = attention_config(len);
  const int pps = len / page, splits = (len + 255) / 256;
  cuda::DevicePageCache cache(c, pps, page, DType::BFloat16);
  cudaMemset(cache.layer_keys(0), 0, size_t(len) * size_t(c.kv_dim()) * 2);
  cudaMemset(cache.layer_values(0), 0, size_t(len) * size_t(c.kv_dim()) * 2);
  std::vector<int> tables(static_cast<size_t>(pps)), pos(static_cast<size_t>(len)), seq(static_cast<size_t>(len), 0),
      first, count, rows(static_cast<size_t>(len));
  for (int i = 0; i < pps; ++i) tables[size_t(i)] = i;
  for (int r = 0; r < len; ++r) pos[size_t(r)] = rows[size_t(r)] = r;
  for (int r = 0; r < len; r += cuda::kPrefillTileRows) {
    first.push_back(r);
    count.push_back(std::min(cuda::kPrefillTileRows, len - r));
  }
  const auto up = [](const std::vector<int>& v) {
    DeviceBuffer b(v.size() * 4, "ints");
    cudaMemcpy(b.get(), v.data(), b.bytes(), cudaMemcpyHostToDevice);
    return b;
  };
  const auto d_tables = up(tables), d_pos = up(pos), d_seq = up(seq), d_first = up(first), d_count = up(count),
             d_rows = up(rows);
  DeviceBuffer q(size_t(len) * size_t(c.q_dim()) * 4, "q"), out(size_t(len) * size_t(c.q_dim()) * 2, "out");
  cudaMemset(q.get(), 0, q.bytes());
  DeviceBuffer o(size_t(len) * size_t(c.n_heads * splits * c.head_dim()) * 4, "o_partial");
  DeviceBuffer lse(size_t(len) * size_t(c.n_heads * splits) * 4, "lse");
  cuda::AttentionArgs a;
  a.q = q.as<float>();
  a.q_stride = c.q_dim();
  a.kv = cuda::KVLayer{cache.layer_keys(0), cache.layer_values(0), DType::BFloat16};
  a.page_size = page;
  a.page_tables = d_tables.as<int>();
  a.pages_per_seq = pps;
  a.row_seq = d_seq.as<int>();
  a.row_pos = d_pos.as<int>();
  a.n_heads = c.n_heads;
  a.n_kv_heads = c.n_kv_heads;
  a.head_dim = c.head_dim();
  a.split_len = 256;
  a.max_splits = splits;
  a.scale = 0.0883883f;
  a.o_partial = o.as<float>();
  a.lse_partial = lse.as<float>();
  const double flops = 4.0 * double(len) * double(len) / 2.0 * c.q_dim();  // causal: half of QK^T and PV
  const double bytes = 2.0 * double(len) * c.kv_dim() * 2 + double(len) * c.q_dim() * 6;
  for (auto _ : state) {
    const float ms = gpu_ms([&] {
      cuda::launch_prefill_attention(a, d_first.as<int>(), d_count.as<int>(), d_rows.as<int>(), int(first.size()),
                                     nullptr);
      cuda::launch_attention_merge(a, len, out.get(), DType::BFloat16, nullptr);
    });
    report(state, ms, bytes, flops);
  }
}
BENCHMARK(BM_PrefillAttention)->Arg(1024)->Arg(4096)->UseManualTime()->Iterations(3);

// One GEMM of a Llama-7B projection shape (4096 x 4096, bf16) at several row counts.
void BM_Gemm(benchmark::State& state) {
  const int rows = int(state.range(0)), n = 4096;
  cuda::GemmRunner gemm;
  DeviceBuffer x(size_t(rows) * n * 2, "x"), w(size_t(n) * n * 2, "w"), y(size_t(rows) * n * 4, "y");
  cudaMemset(x.get(), 0, x.bytes());
  cudaMemset(w.get(), 0, w.bytes());
  const double bytes = double(n) * n * 2 + double(rows) * n * 6;
  for (auto _ : state) {
    const float ms = gpu_ms([&] { gemm.run(x.get(), w.get(), DType::BFloat16, rows, n, n, y.as<float>(), nullptr); });
    report(state, ms, bytes, 2.0 * rows * double(n) * n);
  }
}
BENCHMARK(BM_Gemm)->Arg(1)->Arg(16)->Arg(256)->Arg(4096)->UseManualTime()->Iterations(5);

// The decode step of a whole model (bench_model_config(), bf16): `batch`
// sequences at position `ctx`, as the engine runs it (CUDA graph replay).
// Bytes moved: every weight once plus each sequence's K/V.
ModelConfig bench_model_config() {
  ModelConfig c;
  c.dim = 2048;
  c.hidden_dim = 5632;
  c.n_layers = 8;
  c.n_heads = 32;
  c.n_kv_heads = 8;
  c.vocab_size = 32000;
  c.max_seq_len = 2048;
  c.rope_layout = RopeLayout::RotateHalf;  // as Hugging Face Llama, for the PyTorch comparison
  return c;
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
BENCHMARK(BM_DecodeStep)->Args({1, 512})->Args({8, 512})->Args({32, 512})->UseManualTime()->Iterations(5);

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
  measure_ceilings();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
