// CudaExecutor::forward_and_sample, which the scheduler calls: the same
// forward pass as forward(), then the tokens drawn on the device
// (cuda/device_sampler.h). Oracle: forward()'s logits of the same batch
// through the reference sampler on the host (sample_rows), which is what the
// Executor's default forward_and_sample does. Exact (==) in the emulated
// build, where the device's exp() is the host's (test_device_sampling.cpp).
#include <catch2/catch.hpp>

#include <stdexcept>

#include "cuda/cuda_executor.h"
#include "cuda/device_page_cache.h"
#include "cuda/kernels/kernels.h"
#include "reference/sampling/sampler.h"
#include "reference/synthetic_model.h"
#include "tests/cuda/gpu_test_support.h"

using namespace astrai;
using cuda::DType;

TEST_CASE("forward_and_sample gives forward() and the reference sampler's tokens, sampled on the device",
          "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  // A vocabulary above the device's cap of kept candidates, so that top_k 0
  // (the whole vocabulary) is a row the device leaves to the host.
  ModelConfig config = preset_config("tiny");
  config.vocab_size = 1500;
  REQUIRE(config.vocab_size > cuda::kSampleMaxKept);
  const auto weights = std::make_shared<ModelWeights>(make_synthetic_weights(config, 31));
  for (const DType dtype : {DType::Float32, DType::BFloat16}) {
    INFO(cuda::dtype_name(dtype));
    cuda::CudaExecutor executor(*weights, {dtype, 0, true});  // decode steps replay CUDA graphs
    cuda::DevicePageCache cache(config, 16, 16, dtype);
    // Three requests: greedy, a seeded chat setting, and top_k 0 (on the host).
    const std::vector<std::vector<int>> prompts = {{1, 5, 9, 2}, {3, 3, 7}, {11, 4, 8, 15, 16}};
    std::vector<SamplerState> states = {SamplerState({0.0f, 0, 1.0f, 1}), SamplerState({0.8f, 50, 0.9f, 2}),
                                        SamplerState({1.0f, 0, 1.0f, 3})};
    const auto next_rules = [&] {
      std::vector<RowSampling> rules;
      for (SamplerState& s : states) rules.push_back({s.params(), s.next_uniform()});
      return rules;
    };
    // The step checked both ways: forward() then forward_and_sample() on the
    // same batch (the second writes the same K/V again).
    const auto step = [&](const std::vector<BatchToken>& batch) {
      const std::vector<RowSampling> rules = next_rules();
      const auto logits = executor.forward(batch, cache.view());
      const auto want = sample_rows(logits, rules);
      const auto got = executor.forward_and_sample(batch, cache.view(), rules);
      REQUIRE(got.size() == want.size());
      std::vector<int> tokens;
      for (size_t r = 0; r < got.size(); ++r) {
        INFO("row " << r);
        CHECK(got[r].error == "");
        CHECK(got[r].token == want[r].token);
        tokens.push_back(got[r].token);
      }
      CHECK(executor.last_host_sampled_rows() == 1);  // the top_k 0 row
      return tokens;
    };

    std::vector<std::vector<int>> all = prompts;
    std::vector<BatchToken> prefill;
    for (int s = 0; s < 3; ++s) {
      REQUIRE(cache.admit(s, prompts[size_t(s)]).value() == 0);
      for (int pos = 0; pos < int(prompts[size_t(s)].size()); ++pos)
        prefill.push_back({prompts[size_t(s)][size_t(pos)], s, pos, pos + 1 == int(prompts[size_t(s)].size())});
    }
    std::vector<int> next = step(prefill);
    for (int s = 0; s < 3; ++s) cache.commit(s, all[size_t(s)]);
    for (int decode = 0; decode < 6; ++decode) {
      std::vector<BatchToken> batch;
      for (int s = 0; s < 3; ++s) {
        all[size_t(s)].push_back(next[size_t(s)]);
        REQUIRE(cache.reserve(s, int(all[size_t(s)].size())));
        batch.push_back({next[size_t(s)], s, int(all[size_t(s)].size()) - 1, true});
      }
      next = step(batch);
      for (int s = 0; s < 3; ++s) cache.commit(s, all[size_t(s)]);
    }
    CHECK(executor.graph_replays() > 0);  // sampling ran after graph replays too

    // The count of rules must match the wanted rows (sample_rows' error), and
    // a batch wanting nothing samples nothing.
    std::vector<BatchToken> none = {{next[0], 0, int(all[0].size()), false}};
    REQUIRE(cache.reserve(0, int(all[0].size()) + 1));
    CHECK_THROWS_AS(executor.forward_and_sample(none, cache.view(), next_rules()), std::invalid_argument);
    CHECK(executor.forward_and_sample(none, cache.view(), {}).empty());
    for (int s = 0; s < 3; ++s) cache.release(s);
    CHECK(cache.all_free());
  }
}

TEST_CASE("forward_and_sample of a step that wants no logits finishes it before the next step", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  // A prompt in two chunks, the first wanting no logits (as the scheduler
  // sends a long prompt). Each step refills the pinned batch metadata its
  // queued upload reads, so a step returning before its stream finished would
  // run the first chunk with the second chunk's metadata (the emulated
  // device defers queued work to the next synchronisation, as a GPU may).
  const auto weights = test::tiny_model_weights(12);
  const std::vector<int> prompt = {1, 7, 3, 9, 4, 4, 8, 2, 6, 5, 11, 13};
  const auto run = [&](bool sample_first_chunk) {
    cuda::CudaExecutor executor(*weights, {DType::Float32, 0, false});
    cuda::DevicePageCache cache(executor.config(), 4, 16, DType::Float32);
    // A first step that wants logits sizes every scratch buffer, so that no
    // later step grows one (growing synchronises the stream).
    REQUIRE(cache.admit(1, std::vector<int>{5}).value() == 0);
    const BatchToken warm_up{5, 1, 0, true};
    REQUIRE(executor.forward(std::span<const BatchToken>(&warm_up, 1), cache.view()).shape(0) == 1);
    REQUIRE(cache.admit(0, prompt).value() == 0);
    std::vector<BatchToken> first, second;
    for (int pos = 0; pos < int(prompt.size()); ++pos)
      (pos < 5 ? first : second).push_back({prompt[size_t(pos)], 0, pos, pos + 1 == int(prompt.size())});
    if (sample_first_chunk)
      CHECK(executor.forward_and_sample(first, cache.view(), {}).empty());
    else
      CHECK(executor.forward(first, cache.view()).shape(0) == 0);
    const auto logits = executor.forward(second, cache.view());
    return std::vector<float>(logits.begin(), logits.end());
  };
  CHECK(run(true) == run(false));
}
