// What the CUDA executor keeps between forward() calls, and what could go
// stale there: the device it was made for (the scheduler calls forward() on
// its own thread), its CUDA graphs (keyed by the cache they were captured
// on), its scratch buffers (sized by what a batch needs, never by rows x
// vocabulary; NaN-poisoned between steps, so a kernel reading another step's
// leftovers fails), and prefix-shared pages written by an earlier request.
//
// Exact comparisons (==) here compare the CUDA executor with itself in
// float32: the same kernels on the same inputs give the same bits, since
// every kernel sums in a fixed order and the GEMMs use one algorithm per
// shape (batch_invariant) where the row counts differ.
#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <thread>

#include "cuda/cuda_executor.h"
#include "cuda/device_page_cache.h"
#include "cuda/paged_attention.h"
#include "reference/synthetic_model.h"
#include "tests/cuda/cuda_generate.h"
#include "tests/cuda/gpu_test_support.h"
#ifdef ASTRAI_CUDA_EMULATED
#include "cuda/emulation/emulated_device.h"
#endif

using namespace astrai;
using cuda::DType;

namespace {

// Greedy generation that also keeps every step's logits row.
struct Recorded {
  std::vector<int> tokens;
  std::vector<std::vector<float>> logits;
};
Recorded generate_recorded(cuda::CudaExecutor& executor, cuda::DevicePageCache& cache, const std::vector<int>& prompt,
                           int max_tokens, int task = 1, int* prefix_hit = nullptr) {
  Recorded r;
  GenerateOptions options;
  options.max_new_tokens = max_tokens;
  r.tokens = test::cuda_generate(executor, cache, prompt, options, [&](std::span<const float> row) {
    r.logits.emplace_back(row.begin(), row.end());
    return argmax(row);
  }, task, prefix_hit);
  return r;
}

size_t device_bytes_in_use() {
  size_t free = 0, total = 0;
  REQUIRE(cudaMemGetInfo(&free, &total) == cudaSuccess);
  return total - free;
}

}  // namespace

TEST_CASE("forward() on another thread computes on the executor's device", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  int devices = 0;
  REQUIRE(cudaGetDeviceCount(&devices) == cudaSuccess);
  if (devices < 2) {
    WARN("SKIPPED: one CUDA device; the emulated build has eight and runs this test");
    return;
  }
  const auto weights = test::tiny_model_weights(3);
  const std::vector<BatchToken> batch = {{1, 0, 0, false}, {5, 0, 1, false}, {9, 0, 2, true}};
  const auto run_on = [&](int device) {
    cuda::CudaExecutor executor(*weights, {DType::Float32, device, false});
    cuda::DevicePageCache cache(executor.config(), 8, 16, DType::Float32);
    REQUIRE(cache.admit(0, std::vector<int>{1, 5, 9}).has_value());
    // As the scheduler does: forward() on a thread that never chose a device.
    xt::xtensor<float, 2> logits;
    std::string error;
    std::thread worker([&] {
      try {
        logits = executor.forward(batch, cache.view());
      } catch (const std::exception& e) {
        error = e.what();
      }
    });
    worker.join();
    INFO("device " << device << ": " << error);
    REQUIRE(error.empty());
    return std::vector<float>(logits.begin(), logits.end());
  };
  const auto on_device_1 = run_on(1);
  const auto on_device_0 = run_on(0);
  CHECK(on_device_1 == on_device_0);  // the same kernels on the same inputs
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
}

TEST_CASE("a new cache at a reused address does not replay the old cache's graphs", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  const auto weights = test::tiny_model_weights(5);
  const std::vector<int> prompt = {1, 17, 4, 29, 8};
  cuda::CudaExecutor executor(*weights, {DType::Float32, 0, true});
  const void* old_keys = nullptr;
  {
    cuda::DevicePageCache old_cache(executor.config(), 40, 16, DType::Float32);
    old_keys = old_cache.layer_keys(0);
    generate_recorded(executor, old_cache, prompt, 8);  // decode steps: eager, captured, replayed
  }
  const long replays_before = executor.graph_replays();
  REQUIRE(replays_before > 0);
  // Fewer pages: every layer after the first starts at another offset.
  cuda::DevicePageCache cache(executor.config(), 24, 16, DType::Float32);
#ifdef ASTRAI_CUDA_EMULATED
  // The emulated device hands freed memory out again, most recent first (as
  // caching allocators do), so the new cache sits where the old one was.
  REQUIRE(cache.layer_keys(0) == old_keys);
#else
  if (cache.layer_keys(0) != old_keys) WARN("the driver put the new cache elsewhere: the graph key was not tested");
#endif
  const Recorded got = generate_recorded(executor, cache, prompt, 8);

  cuda::CudaExecutor fresh(*weights, {DType::Float32, 0, false});
  cuda::DevicePageCache fresh_cache(fresh.config(), 24, 16, DType::Float32);
  const Recorded want = generate_recorded(fresh, fresh_cache, prompt, 8);
  CHECK(got.tokens == want.tokens);
  CHECK(got.logits == want.logits);
}

TEST_CASE("scratch buffers grow with the batch's rows only where each row needs its own", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  // A vocabulary and context large enough that per-row logits (128 KB a row)
  // or per-row attention partials (8 heads x 32 splits x 16 x 4 B = 16 KB a
  // row) would dominate the activations (about 9 KB a row, below).
  const ModelConfig config{.dim = 128, .hidden_dim = 256, .n_layers = 1, .n_heads = 8, .n_kv_heads = 8,
                           .vocab_size = 32000, .max_seq_len = 8192};
  const auto weights = std::make_shared<ModelWeights>(make_synthetic_weights(config, 2));
  const int page = 16;
  // Device bytes one forward() adds for a prefill of `rows` rows wanting one logits row.
  const auto growth = [&](int rows) {
    cuda::CudaExecutor executor(*weights, {DType::Float32, 0, false});
    cuda::DevicePageCache cache(config, rows / page + 1, page, DType::Float32);
    std::vector<int> prompt(size_t(rows), 7);
    REQUIRE(cache.admit(0, prompt).has_value());
    std::vector<BatchToken> batch;
    for (int pos = 0; pos < rows; ++pos) batch.push_back({7, 0, pos, pos == rows - 1});
    const size_t before = device_bytes_in_use();
    const auto logits = executor.forward(batch, cache.view());
    REQUIRE(logits.shape(0) == 1);
    return double(device_bytes_in_use() - before);
  };
  const double per_row = (growth(600) - growth(300)) / 300.0;
  // What each batch row does need, in float32: x, h, proj, attn, ffn_out
  // (dim each), q/k/v (3 dim), gate/up (2 hidden), hidden, and its metadata
  // (cuda::PlanLayout: one int per section and a 512-page table row).
  const double activations = 4.0 * (8 * config.dim + 3 * config.hidden_dim);
  const double metadata = 4.0 * (cuda::PlanLayout::kTables + config.max_seq_len / page);
  INFO("device bytes per batch row: " << per_row << "; activations " << activations << ", metadata " << metadata);
  CHECK(per_row <= activations + metadata);
}

TEST_CASE("scratch poisoned with NaN before every step changes no bit; graph replays are counted", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  const auto weights = test::tiny_model_weights(8);
  const std::vector<int> prompt = {1, 3, 5, 7, 11, 13};
  const int tokens = 10;  // the prefill's token, then 9 decode steps
  cuda::CudaExecutor plain(*weights, {DType::Float32, 0, false});
  cuda::DevicePageCache plain_cache(plain.config(), 8, 16, DType::Float32);
  const Recorded want = generate_recorded(plain, plain_cache, prompt, tokens);

  CudaOptions options{DType::Float32, 0, true};
  options.poison_scratch = true;
  cuda::CudaExecutor executor(*weights, options);
  cuda::DevicePageCache cache(executor.config(), 8, 16, DType::Float32);
#ifdef ASTRAI_CUDA_EMULATED
  const uint64_t graph_launches_before = emu::counters().graph_launches;
#endif
  const Recorded first = generate_recorded(executor, cache, prompt, tokens);
  // Decode steps of one shape: the first runs eagerly, the second is captured
  // and launched, every later one replays.
  CHECK(executor.graph_replays() == tokens - 2);
  const Recorded second = generate_recorded(executor, cache, prompt, tokens, 2);
  // The second prompt's prefill has the first's shape: captured and launched
  // (mixed and prefill steps are captured where their shape repeats); then
  // every decode step replays the first run's graph.
  CHECK(executor.graph_replays() == (tokens - 2) + 1 + (tokens - 1));
#ifdef ASTRAI_CUDA_EMULATED
  CHECK(emu::counters().graph_launches - graph_launches_before == uint64_t(executor.graph_replays()));
#endif
  CHECK(first.logits == want.logits);
  CHECK(second.logits == want.logits);
  CHECK(first.tokens == want.tokens);
}

TEST_CASE("a request reading prefix pages another request wrote gets the bits it gets alone", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  const auto weights = test::tiny_model_weights(11);
  CudaOptions options{DType::Float32, 0, true};
  options.batch_invariant = true;  // the shared prefix was computed in another batch shape
  const std::vector<int> first_prompt = {1, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55};
  std::vector<int> second_prompt(first_prompt.begin(), first_prompt.begin() + 13);
  second_prompt.insert(second_prompt.end(), {60, 61, 62});
  const int page = 4;

  cuda::CudaExecutor executor(*weights, options);
  cuda::DevicePageCache cache(executor.config(), 64, page, DType::Float32);
  generate_recorded(executor, cache, first_prompt, 5, 1);
  int hit = 0;
  const Recorded shared = generate_recorded(executor, cache, second_prompt, 12, 2, &hit);
  CHECK(hit == 12);  // three whole pages of the common 13 tokens

  cuda::CudaExecutor alone_executor(*weights, options);
  cuda::DevicePageCache alone_cache(executor.config(), 64, page, DType::Float32);
  const Recorded alone = generate_recorded(alone_executor, alone_cache, second_prompt, 12, 2);
  CHECK(shared.tokens == alone.tokens);
  CHECK(shared.logits == alone.logits);
}
