// Constrained requests through InferenceEngine on the CUDA executor (issue
// 27): the masks go up once per step and the device sampler applies them,
// inside the captured graph of a decode step when graphs are on. Each
// request, constrained or free, must get exactly the tokens of the sequential
// loop on the same executor whose masked row is sampled on the host by the
// reference (sample_with_uniform with the mask): the executor is batch
// invariant (test_cuda_batching.cpp) and the masked device sampler is the
// masked reference bit for bit (test_device_masks.cpp).
#include <memory>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "cuda/cuda_executor.h"
#include "cuda/device_page_cache.h"
#include "reference/sampling/sampler.h"
#include "reference/sampling/token_mask.h"
#include "tests/cuda/cuda_generate.h"
#include "tests/cuda/gpu_test_support.h"
#include "tests/engine/scheduler/engine_harness.h"
#include "tests/support/test_only_constraints.h"

using namespace astrai;

namespace {

using test::kWaitTimeout;
using test::tiny_model;

CudaOptions invariant(bool graphs) {
  CudaOptions options{cuda::DType::Float32, 0, graphs};
  options.batch_invariant = true;
  return options;
}

}  // namespace

TEST_CASE("constrained and free requests on the CUDA executor: graphs on and off give the sequential masked loop's "
          "tokens",
          "[cuda][mask][graphs]") {
  ASTRAI_REQUIRE_GPU();
  const test::TinyModel& m = tiny_model();
  const std::vector<int>& eos = m.tokenizer->end_of_generation_ids();
  std::mt19937 rng(2727);
  struct Planned {
    std::vector<int> prompt;
    SamplingParams sampling;
    std::vector<int> ids;  // empty: free
    std::vector<int> expected;
  };
  std::vector<Planned> planned;
  for (int i = 0; i < 8; ++i) {
    Planned p;
    p.prompt = test::random_prompt(rng, 2 + i);
    p.sampling.temperature = i % 3 == 0 ? 0.0f : 1.0f;
    p.sampling.top_k = 0;
    p.sampling.seed = 300 + uint64_t(i);
    if (i % 2 == 0)
      for (int id = 3; id < m.vocab(); ++id)
        if (rng() % 7 == 0) p.ids.push_back(id);
    planned.push_back(p);
  }
  const int max_tokens = 10;
  {  // The oracle: the sequential loop on the CUDA executor, sampling the masked row on the host.
    cuda::CudaExecutor executor(*m.weights, invariant(false));
    for (Planned& p : planned) {
      cuda::DevicePageCache cache(executor.config(), 64, 4, cuda::DType::Float32);
      GenerateOptions options;
      options.max_new_tokens = max_tokens;
      options.stop_tokens = {m.tokenizer->eos_id(), m.tokenizer->bos_id()};
      std::vector<std::uint32_t> mask(token_mask_words(size_t(m.vocab())), 0u);
      for (int id : p.ids) test::set_bit(mask, id);
      SamplerState state(p.sampling, p.prompt);
      p.expected = test::cuda_generate(executor, cache, p.prompt, options, [&](std::span<const float> logits) {
        const int token = sample_with_uniform(logits, p.sampling, state.next_uniform(),
                                              p.ids.empty() ? std::span<const std::uint32_t>{} : mask);
        return token;
      });
    }
  }
  for (const bool graphs : {true, false}) {
    INFO("CUDA graphs " << (graphs ? "on" : "off"));
    auto executor = std::make_unique<cuda::CudaExecutor>(*m.weights, invariant(graphs));
    const cuda::CudaExecutor* raw = executor.get();
    const int n_pages = 8 * (m.context() / 4);
    auto cache = std::make_unique<cuda::DevicePageCache>(executor->config(), n_pages, 4, cuda::DType::Float32);
    InferenceEngine engine(std::move(executor), std::move(cache), m.tokenizer, test::paged_config(8, 64, n_pages));
    // Constrained requests first grow the sampler's mask buffers (which
    // drops every graph); then a round of the same prompts, all free,
    // captures the step shapes' graphs without masks: the masked steps of the
    // last round must not replay those (their key says whether a step has masks).
    {  // (all eight at once: the buffers grow to the largest padded batch)
      std::vector<std::shared_ptr<GenerateResult>> growers;
      for (const Planned& p : planned) {
        GenerationRequest g;
        g.prompt_ids = p.prompt;
        g.max_tokens = 2;
        g.constraint = test::compiled(test::IdSetConstraint({5, 6}, eos, false));
        growers.push_back(engine.generate_with_request(std::move(g)));
      }
      for (const auto& r : growers) REQUIRE(r->wait_for(kWaitTimeout).has_value());
    }
    std::vector<std::shared_ptr<GenerateResult>> warm_up;
    for (const Planned& p : planned) {
      GenerationRequest g;
      g.prompt_ids = p.prompt;
      g.max_tokens = max_tokens;
      g.sampling = p.sampling;
      warm_up.push_back(engine.generate_with_request(std::move(g)));
    }
    for (const auto& r : warm_up) REQUIRE(r->wait_for(kWaitTimeout).has_value());
    const long replays_before = raw->graph_replays();
    std::vector<std::shared_ptr<GenerateResult>> results;
    for (const Planned& p : planned) {
      GenerationRequest g;
      g.prompt_ids = p.prompt;
      g.max_tokens = max_tokens;
      g.sampling = p.sampling;
      if (!p.ids.empty()) g.constraint = test::compiled(test::IdSetConstraint(p.ids, eos, false));
      results.push_back(engine.generate_with_request(std::move(g)));
    }
    for (size_t k = 0; k < planned.size(); ++k) {
      auto out = results[k]->wait_for(kWaitTimeout);
      REQUIRE(out.has_value());
      INFO("request " << k << (planned[k].ids.empty() ? " (free)" : " (constrained)"));
      CHECK(out->tokens == planned[k].expected);
    }
    if (graphs) CHECK(raw->graph_replays() > replays_before);  // the masked steps replayed a captured graph
    test::require_all_free(engine);
  }
}
