// A sliding-window model served from a paged cache whose sliding layers keep
// only their window: every request still gets the sequential reference
// loop's tokens (reference_tokens: DenseKVCache, nothing given back), with
// prefix hits longer than the window, n choices forked from one prompt,
// chunked prefill across the window's edge, and a pool so small that
// requests wait and are preempted.
#include <future>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "engine/inference_engine.h"
#include "reference/synthetic_model.h"
#include "engine/tokenizer/synthetic_tokenizer.h"
#include "tests/engine/scheduler/engine_harness.h"
#include "tests/engine/scheduler/reference_oracle.h"

namespace test_sliding_window_cache {

using namespace astrai;

// Gemma-shaped in miniature: two sliding layers of three, a window of 6
// (shorter than the 4-token pages times two), context 64.
struct WindowedModel {
  std::shared_ptr<const ModelWeights> weights;
  std::shared_ptr<const Tokenizer> tokenizer;
};

const WindowedModel& windowed_model() {
  static const WindowedModel model = [] {
    ModelConfig c{.dim = 32, .hidden_dim = 64, .n_layers = 3, .n_heads = 4, .n_kv_heads = 2, .vocab_size = 300,
                  .max_seq_len = 64};
    c.sliding_window = 6;
    c.sliding_layers = {true, false, true};
    WindowedModel m;
    m.weights = std::make_shared<const ModelWeights>(make_synthetic_weights(c, 20261205));
    m.tokenizer = std::make_shared<const Tokenizer>(make_synthetic_tokenizer(c.vocab_size));
    return m;
  }();
  return model;
}

std::vector<int> random_ids(std::mt19937& rng, int length) {
  std::uniform_int_distribution<int> id(3, 299);
  std::vector<int> ids(static_cast<size_t>(length));
  for (int& t : ids) t = id(rng);
  return ids;
}

SamplingParams sampling_for(int i) {
  SamplingParams s;
  s.temperature = i % 2 ? 1.0f : 0.0f;
  s.seed = uint64_t(100 + i);
  return s;
}

TEST_CASE("A sliding-window model on a paged cache that gives back the window's old pages gets the reference's tokens",
          "[engine][prefix][sliding]") {
  const WindowedModel& m = windowed_model();
  std::mt19937 rng(1205);
  const std::vector<int> prefix = random_ids(rng, 30);  // 7 whole pages: hits reach far past the window
  std::vector<std::vector<int>> prompts;
  for (int i = 0; i < 10; ++i) {
    std::vector<int> p = prefix;
    const auto tail = random_ids(rng, 1 + i % 7);
    p.insert(p.end(), tail.begin(), tail.end());
    prompts.push_back(p);
  }
  const int max_tokens = 24;
  std::vector<std::vector<int>> expected;
  for (size_t i = 0; i < prompts.size(); ++i)
    expected.push_back(test::reference_tokens(*m.weights, *m.tokenizer, prompts[i], max_tokens, sampling_for(int(i))));

  // Ample pages; and 20 full-layer pages (a context is 16), so that requests wait and are preempted.
  for (const int pages : {0, 20}) {
    INFO("cache pages: " << pages);
    InferenceEngine engine(m.weights, m.tokenizer, test::paged_config(4, 8, pages));
    const SchedulerStats idle = engine.get_stats();
    REQUIRE(idle.cache.sliding_blocks_total > 0);
    // 25 sliding pages: one context (16) and a window (3) for each of 3 other tasks.
    if (pages == 0) REQUIRE(idle.cache.sliding_blocks_total == 25);
    REQUIRE(engine.kv_cache_sliding_bytes() > 0);
    // The first request alone registers the prefix; the second, alone too,
    // hits it past the window (nothing was evicted in between); the others,
    // together, hit what the pools still hold.
    auto run = [&](size_t from, size_t to) {
      std::vector<std::future<TaskOutput>> futures;
      for (size_t i = from; i < to; ++i) {
        GenerationRequest r;
        r.prompt_ids = prompts[i];
        r.max_tokens = max_tokens;
        r.sampling = sampling_for(int(i));
        futures.push_back(engine.generate_async(r));
      }
      std::vector<TaskOutput> outputs;
      for (auto& f : futures) outputs.push_back(f.get());
      return outputs;
    };
    const auto first = run(0, 1);
    CHECK(first[0].tokens == expected[0]);
    CHECK(first[0].cached_prompt_tokens == 0);
    const auto second = run(1, 2);
    CHECK(second[0].tokens == expected[1]);
    if (pages == 0) CHECK(second[0].cached_prompt_tokens == 28);  // 7 pages, the window's two among them
    const auto rest = run(2, prompts.size());
    for (size_t i = 0; i < rest.size(); ++i) {
      INFO("request " << i + 2 << ", " << rest[i].cached_prompt_tokens << " prompt tokens hit");
      CHECK(rest[i].tokens == expected[i + 2]);
    }
    const SchedulerStats stats = engine.wait_until_idle();
    CHECK(stats.cache.blocks_held == 0);
    CHECK(stats.cache.sliding_blocks_held == 0);
  }
}

TEST_CASE("n choices of a prompt longer than the window fork the sliding pages and get their seeds' tokens",
          "[engine][choices][sliding]") {
  const WindowedModel& m = windowed_model();
  std::mt19937 rng(512);
  const std::vector<int> prompt = random_ids(rng, 21);  // ends inside a page: the forks copy it
  InferenceEngine engine(m.weights, m.tokenizer, test::paged_config(4, 8));
  GenerationRequest r;
  r.prompt_ids = prompt;
  r.max_tokens = 20;
  r.sampling = sampling_for(1);
  r.n = 3;
  const std::vector<TaskOutput> outputs = engine.generate_choices(r).wait();
  for (int i = 0; i < 3; ++i) {
    SamplingParams s = sampling_for(1);
    s.seed = *s.seed + uint64_t(i);
    INFO("choice " << i);
    CHECK(outputs[size_t(i)].tokens == test::reference_tokens(*m.weights, *m.tokenizer, prompt, 20, s));
  }
  const SchedulerStats stats = engine.wait_until_idle();
  CHECK(stats.forked_prompt_tokens == 2 * 21);
  CHECK(stats.cache.sliding_blocks_held == 0);
}

}  // namespace test_sliding_window_cache
