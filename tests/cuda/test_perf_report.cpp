// The performance report's inputs, checked on the emulated device:
//  - its decode step is the executor's: the kernels the report prices, run
//    at a small shape in the recipe's order, launch the same kernels in the
//    same order as a real decode step of CudaExecutor (so a kernel added to
//    enqueue() and not to decode_step.cpp fails here);
//  - the access stream prices a kernel as its code says: the vectorized
//    element-wise convert kernel is fully coalesced (every sector it touches
//    holds only bytes it asked for), and the report's whole pipeline runs.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "cuda/cuda_executor.h"
#include "cuda/device_page_cache.h"
#include "cuda/emulation/memory_trace.h"
#include "cuda/perf_model/decode_step.h"
#include "cuda/perf_model/perf_report.h"
#include "cuda/perf_model/trace_observer.h"
#include "reference/synthetic_model.h"
#include "tests/cuda/cuda_generate.h"

using namespace astrai;

namespace {

struct LaunchNames final : emu::MemoryObserver {
  std::vector<std::string> names;
  void launch_begin(const emu::KernelLaunch& l) override { names.push_back(emu::code_function_name(l.function)); }
  void access(const emu::MemoryAccess&) override {}
  void launch_end(const emu::KernelLaunch&) override {}
};

struct Observe {
  explicit Observe(emu::MemoryObserver* o) { emu::set_memory_observer(o); }
  ~Observe() { emu::set_memory_observer(nullptr); }
};

const cuda::cases::KernelCase& kernel_case(const std::string& name) {
  for (const auto& c : cuda::cases::kernel_cases())
    if (c.name == name) return c;
  FAIL("no kernel case " << name);
  throw 0;
}

}  // namespace

TEST_CASE("the report's decode step launches what CudaExecutor's decode step launches", "[cuda][perf_model]") {
  ModelConfig config = preset_config("tiny");
  config.n_layers = 2;
  const auto weights = std::make_shared<const ModelWeights>(make_synthetic_weights(config, 5));
  cuda::CudaExecutor executor(*weights, {cuda::DType::BFloat16, 0, false});
  cuda::DevicePageCache cache(config, 16, 16, cuda::DType::BFloat16);
  LaunchNames seen;
  {
    Observe observe(&seen);
    GenerateOptions options;
    options.max_new_tokens = 2;  // a prefill step, then one decode step
    test::cuda_generate(executor, cache, {1, 2, 3, 4}, options, [](std::span<const float>) { return 7; });
  }
  // The last step's launches: from the last embedding gather on.
  auto first = seen.names.end();
  for (auto it = seen.names.begin(); it != seen.names.end(); ++it)
    if (it->find("embedding_gather_kernel") != std::string::npos) first = it;
  REQUIRE(first != seen.names.end());
  const std::vector<std::string> executor_step(first, seen.names.end());

  cuda::perf::ReferenceShape shape;
  shape.name = "tiny";
  shape.dim = config.dim;
  shape.n_heads = config.n_heads;
  shape.n_kv_heads = config.n_kv_heads;
  shape.head_dim = config.head_dim();
  shape.hidden = config.hidden_dim;
  shape.vocab = config.vocab_size;
  shape.layers = config.n_layers;
  shape.batch = 1;
  shape.context = 5;
  shape.max_seq_len = config.max_seq_len;
  const auto parts = cuda::perf::decode_step(shape);
  // Each part's launches at this shape, repeated per layer in the executor's
  // order (a layer's parts in sequence, layer after layer); the sampler is
  // not part of forward() and is left out.
  std::vector<std::vector<std::string>> part_launches;
  for (const auto& p : parts) {
    LaunchNames names;
    auto run = kernel_case(p.case_name).prepare(p.shape);
    {
      Observe observe(&names);
      run->launch(1, nullptr);
      REQUIRE(cudaStreamSynchronize(nullptr) == cudaSuccess);
    }
    part_launches.push_back(names.names);
  }
  std::vector<std::string> recipe_step;
  size_t i = 0;
  while (i < parts.size() && parts[i].per_step == 1 && parts[i].case_name != "sample") {
    recipe_step.insert(recipe_step.end(), part_launches[i].begin(), part_launches[i].end());
    ++i;
  }
  const size_t layer_begin = i;
  while (i < parts.size() && parts[i].per_step == shape.layers) ++i;
  for (int l = 0; l < shape.layers; ++l)
    for (size_t j = layer_begin; j < i; ++j)
      recipe_step.insert(recipe_step.end(), part_launches[j].begin(), part_launches[j].end());
  for (; i < parts.size(); ++i)
    if (parts[i].case_name != "sample")
      recipe_step.insert(recipe_step.end(), part_launches[i].begin(), part_launches[i].end());
  CHECK(recipe_step == executor_step);
}

TEST_CASE("the access stream prices the convert kernel as fully coalesced", "[cuda][perf_model]") {
  cuda::perf::TraceObserver observer(16);
  auto run = kernel_case("convert").prepare({cuda::DType::BFloat16, 3, {{"n", 1 << 16}}});
  {
    Observe observe(&observer);
    run->launch(1, nullptr);
    REQUIRE(cudaStreamSynchronize(nullptr) == cudaSuccess);
  }
  const auto launches = observer.take();
  REQUIRE(launches.size() == 1);
  const auto& t = launches[0].totals;
  INFO(launches[0].name << ": " << t.global_instructions << " warp-level global accesses");
  REQUIRE(t.global_instructions > 0);
  CHECK(t.sector_efficiency() == 1.0);
  CHECK(t.shared_instructions == 0);
}
