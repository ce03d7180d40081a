// The engine's batching oracle on the CUDA executor: random requests run
// through InferenceEngine on a CudaExecutor and its DevicePageCache, greedy
// and seeded, together and staggered, with cancellations and stop strings,
// prefix hits, and a cache small enough to preempt, get exactly the tokens
// the sequential loop gives each of them alone (tests/engine/scheduler's
// harness and checks, unchanged).
//
// The sequential loop runs on the same CUDA executor (test::cuda_generate):
// how the CUDA executor's logits relate to the reference's is the business of
// test_cuda_executor.cpp (golden tokens and logits tolerances); this file
// tests that batching changes nothing. The equality is exact because the
// executor is batch invariant, in float32 and bf16 alike: every kernel sums in
// a fixed order for a row whatever else is in the batch (test_attention.cpp,
// test_gemm.cpp), and the executor runs with one GEMM algorithm per shape
// (batch_invariant).
#include <catch2/catch.hpp>

#include "cuda/cuda_executor.h"
#include "cuda/device_page_cache.h"
#include "cuda/kernels/kernels.h"
#include "engine/kv_cache/page_cache.h"
#include "reference/sampling/sampler.h"
#include "reference/synthetic_model.h"
#include "tests/cuda/cuda_expected.h"
#include "tests/cuda/cuda_generate.h"
#include "tests/cuda/gpu_test_support.h"
#include "tests/engine/scheduler/engine_harness.h"
#include "tests/engine/scheduler/speculation_oracle.h"

namespace {

using namespace astrai;
using namespace astrai::test;
using cuda::DType;

CudaOptions invariant(DType t, bool graphs = true, bool poison = false) {
  CudaOptions options{t, 0, graphs};
  options.batch_invariant = true;
  options.poison_scratch = poison;  // a value some launch forgot to write is NaN, not last step's
  return options;
}

// Each request's tokens from the sequential loop alone, on the CUDA executor.
void compute_expected_on_cuda(std::vector<PlannedRequest>& requests, DType t = DType::Float32,
                              const TinyModel& m = tiny_model()) {
  cuda::CudaExecutor executor(*m.weights, invariant(t));
  cuda::DevicePageCache cache(executor.config(), 64, 4, t);
  compute_expected_on(executor, cache, requests);
}

// An engine on the CUDA executor: `max_running` tasks, `tokens_per_step`
// rows a step, a device cache of `pages` 4-token pages (0: one whole context
// per running task, so nothing is ever preempted).
std::unique_ptr<InferenceEngine> cuda_engine(int max_running, int tokens_per_step, int pages = 0,
                                             DType t = DType::Float32, const TinyModel& m = tiny_model(),
                                             bool graphs = true, bool poison = false,
                                             SpeculationConfig speculation = {}) {
  auto executor = std::make_unique<cuda::CudaExecutor>(*m.weights, invariant(t, graphs, poison));
  const int n_pages = pages > 0 ? pages : max_running * (m.context() / 4);
  auto cache = std::make_unique<cuda::DevicePageCache>(executor->config(), n_pages, 4, t);
  EngineConfig config = paged_config(max_running, tokens_per_step, n_pages);
  config.scheduler.speculation = std::move(speculation);
  return std::make_unique<InferenceEngine>(std::move(executor), std::move(cache), m.tokenizer, config);
}

// tiny_model()'s shape with Qwen 3 MoE layers: 8 experts of 24, top 2,
// renormalised; layer 0 dense (decoder_sparse_step 2).
const TinyModel& tiny_moe_model() {
  static const TinyModel model = [] {
    TinyModel m = tiny_model();
    ModelConfig c = m.weights->config;
    c.options.moe = MoeModule::Mlp;
    c.moe.n_experts = 8;
    c.moe.n_experts_used = 2;
    c.moe.expert_hidden_dim = 24;
    c.moe.norm_topk_prob = true;
    c.moe.sparse_step = 2;
    m.weights = std::make_shared<const ModelWeights>(make_synthetic_weights(c, 20261204));
    return m;
  }();
  return model;
}

// tiny_model()'s shape with a sliding window of 6 on layer 0 (Gemma's mix):
// past position 36 a row's walk starts at 32 (its window's first position
// rounded down to the kernels' 32-position tile), so pages 0-7 go back.
const TinyModel& tiny_windowed_model() {
  static const TinyModel model = [] {
    TinyModel m = tiny_model();
    ModelConfig c = m.weights->config;
    c.sliding_window = 6;
    c.sliding_layers = {true, false};
    m.weights = std::make_shared<const ModelWeights>(make_synthetic_weights(c, 20261205));
    return m;
  }();
  return model;
}

// cuda_engine's engine with the sliding layers in a device pool of their own
// (make_cuda_kv_cache's sizing for `max_running` tasks).
std::unique_ptr<InferenceEngine> windowed_cuda_engine(int max_running, int tokens_per_step, int pages, bool graphs,
                                                      SpeculationConfig speculation = {}) {
  const TinyModel& m = tiny_windowed_model();
  auto executor = std::make_unique<cuda::CudaExecutor>(*m.weights, invariant(DType::Float32, graphs, !graphs));
  const int n_pages = pages > 0 ? pages : max_running * (m.context() / 4);
  const int sliding_pages = sliding_pages_for(executor->config(), n_pages, 4, max_running, cuda::kAttentionTile);
  auto cache = std::make_unique<cuda::DevicePageCache>(executor->config(), n_pages, 4, DType::Float32, sliding_pages);
  EngineConfig config = paged_config(max_running, tokens_per_step, n_pages);
  config.scheduler.speculation = std::move(speculation);
  return std::make_unique<InferenceEngine>(std::move(executor), std::move(cache), m.tokenizer, config);
}

std::vector<int> concat(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

TEST_CASE("CUDA executor: greedy and seeded requests together get their sequential tokens", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  for (const DType t : {DType::Float32, DType::BFloat16}) {
    std::mt19937 rng(101);
    auto requests = random_requests(rng, 12, {.sampled_fraction = 0.5});
    compute_expected_on_cuda(requests, t);
    for (const auto& [running, per_step] : {std::pair{4, 8}, std::pair{16, 256}}) {
      INFO(cuda::dtype_name(t) << ", " << running << " running, " << per_step << " tokens per step");
      auto engine = cuda_engine(running, per_step, 0, t);
      auto logs = run_requests(*engine, requests, Submission::Together);
      check_outputs(requests, logs);
      const SchedulerStats stats = require_all_free(*engine);
      CHECK(stats.prefix_hit_tokens == cached_prompt_tokens_of(logs));
    }
  }
}

// Speculation on the device: a decode row and its proposals are one short
// prefill run of the task (prefill attention tiles, not the decode graphs),
// every row sampled on the device. The tokens must be those of the
// sequential loop on the same executor, which scores every position as a
// decode row: the batch-invariant executor computes a row the same in a
// decode batch and in a prefill tile (the chunked-prefill cases above rest
// on the same property), so greedy equality holds bit for bit, in float32
// and bf16. Requests that opt out decode beside them in the same batches; a
// small cache preempts; the windowed model gives back sliding pages while
// rejected proposals' rows sit past the committed positions.
TEST_CASE("CUDA executor: speculative rows give every request its sequential tokens, whatever is proposed",
          "[cuda][speculative]") {
  ASTRAI_REQUIRE_GPU();
  for (const DType t : {DType::Float32, DType::BFloat16}) {
    std::mt19937 rng(4206);
    auto requests = random_requests(rng, 8, {.sampled_fraction = 0.5, .penalized_fraction = 0.3});
    for (size_t i = 0; i < requests.size(); i += 4) requests[i].max_proposed = 0;
    compute_expected_on_cuda(requests, t);
    const auto answers = answers_of(requests);
    for (const Guess guess : kGuesses)
      for (const int pages : {0, 20}) {
        INFO(cuda::dtype_name(t) << ", proposer: " << guess_name(guess) << ", pages " << pages);
        auto engine = cuda_engine(4, 16, pages, t, tiny_model(), true, false,
                                  speculation(guess, answers, tiny_model().vocab()));
        auto logs = run_requests(*engine, requests, Submission::Together);
        check_outputs(requests, logs);
        const SchedulerStats stats = require_all_free(*engine);
        CHECK(stats.spec_drafts > 0);
        if (guess == Guess::Right) CHECK(stats.spec_accepted_tokens == stats.spec_draft_tokens);
        if (pages == 20) CHECK(stats.preemptions > 0);
      }
  }
  const TinyModel& m = tiny_windowed_model();
  std::mt19937 rng(4207);
  auto requests = random_requests(rng, 6, {.min_prompt = 20, .min_tokens = 30, .sampled_fraction = 0.5});
  for (auto& r : requests) r.ignore_eos = true;
  compute_expected_on_cuda(requests, DType::Float32, m);
  for (const Guess guess : {Guess::Right, Guess::Mixed}) {
    INFO("windowed model, proposer: " << guess_name(guess));
    auto engine = windowed_cuda_engine(3, 16, 0, true, speculation(guess, answers_of(requests), m.vocab()));
    auto logs = run_requests(*engine, requests, Submission::Together);
    check_outputs(requests, logs);
    const SchedulerStats stats = require_all_free(*engine);
    CHECK(stats.spec_accepted_tokens > 0);
    CHECK(stats.cache.sliding_blocks_held == 0);
  }
}

TEST_CASE("CUDA executor: a Mixture-of-Experts model's requests, batched, get their sequential tokens", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  // Mixed steps of prefill chunks and decode rows route every row alone
  // (cuda/moe_ffn.h), so batching changes no expert choice and no bit, with
  // graphs (a step's routing replays) and without, every scratch buffer
  // (the experts' too) NaN before each step.
  const TinyModel& m = tiny_moe_model();
  for (const DType t : {DType::Float32, DType::BFloat16}) {
    std::mt19937 rng(202);
    auto requests = random_requests(rng, 10, {.sampled_fraction = 0.5});
    compute_expected_on_cuda(requests, t, m);
    for (const bool graphs : {true, false}) {
      INFO(cuda::dtype_name(t) << (graphs ? ", graphs" : ", no graphs"));
      auto engine = cuda_engine(4, 8, 0, t, m, graphs, true);
      auto logs = run_requests(*engine, requests, Submission::Staggered);
      check_outputs(requests, logs);
      require_all_free(*engine);
    }
  }
}

TEST_CASE("CUDA executor: requests with penalties, bias and min_p, sampled on the device, get their sequential "
          "tokens",
          "[cuda][penalties]") {
  ASTRAI_REQUIRE_GPU();
  std::mt19937 rng(606);
  // (No logprobs here: the device sums them in another order than the host,
  // so they are compared within a tolerance in test_device_sampling_features.cpp.)
  auto requests = random_requests(
      rng, 8, {.min_tokens = 10, .max_tokens = 30, .sampled_fraction = 0.5, .penalized_fraction = 0.9});
  compute_expected_on_cuda(requests);
  auto engine = cuda_engine(4, 8);
  auto logs = run_requests(*engine, requests, Submission::Together);
  check_outputs(requests, logs);
  require_all_free(*engine);
}

TEST_CASE("CUDA executor: staggered arrivals with cancellations and stop strings", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  std::mt19937 rng(303);
  auto requests =
      random_requests(rng, 16, {.sampled_fraction = 0.5, .cancelled_fraction = 0.3, .stop_fraction = 0.4});
  requests[0].cancel_after = 0;
  compute_expected_on_cuda(requests);
  auto engine = cuda_engine(4, 8);
  auto logs = run_requests(*engine, requests, Submission::Staggered);
  check_outputs(requests, logs);
  require_all_free(*engine);
}

TEST_CASE("CUDA executor: requests sharing a prefix hit its pages and get their sequential tokens", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  std::mt19937 rng(707);
  const std::vector<int> prefix = random_prompt(rng, 18);  // 4 whole pages and 2 tokens
  std::vector<PlannedRequest> requests;
  for (int i = 0; i < 8; ++i) {
    PlannedRequest r;
    r.prompt = concat(prefix, random_prompt(rng, 1 + i % 5));
    r.max_tokens = 16;
    r.sampling.temperature = i % 2 ? 1.0f : 0.0f;
    r.sampling.seed = uint64_t(i);
    requests.push_back(r);
  }
  compute_expected_on_cuda(requests);
  auto engine = cuda_engine(4, 8);
  std::vector<PlannedRequest> head(requests.begin(), requests.begin() + 1);
  auto first_logs = run_requests(*engine, head, Submission::Together);
  check_outputs(head, first_logs);
  std::vector<PlannedRequest> rest(requests.begin() + 1, requests.end());
  auto logs = run_requests(*engine, rest, Submission::Together);
  check_outputs(rest, logs);
  for (auto& log : logs) CHECK(output_of(*log).cached_prompt_tokens == 16);
  require_all_free(*engine);
}

TEST_CASE("CUDA executor: a cache too small for all running requests preempts, tokens unchanged", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  std::mt19937 rng(404);
  auto requests = random_requests(rng, 10, {.min_prompt = 10, .max_prompt = 30, .min_tokens = 20, .max_tokens = 40,
                                            .sampled_fraction = 0.5, .cancelled_fraction = 0.2});
  compute_expected_on_cuda(requests);
  auto engine = cuda_engine(6, 16, 20);  // 20 pages: one whole context (16) and a little more
  auto logs = run_requests(*engine, requests, Submission::Together);
  check_outputs(requests, logs);
  const SchedulerStats stats = require_all_free(*engine);
  INFO("preemptions: " << stats.preemptions);
  CHECK(stats.preemptions > 0);
  CHECK(stats.prefix_hit_tokens == cached_prompt_tokens_of(logs));
}

// The sliding layer's rows in a device pool of their own that gives back
// the pages its window (rounded down to the kernels' tile) has passed: each
// request must get the tokens it gets alone on a one-pool cache (bit-exact
// batches: cuda/gemm.h's batch invariance), with prefix hits of 40 tokens
// (past the window and the tile: the sliding layer reuses only pages 8 and
// 9), chunked prefill across the window's edge, graphs on and off, n choices
// forking the sliding pages, and a pool small enough to preempt. With one
// running task the sliding pool has 16 pages beside the full layers' 64, so
// it evicts where the full pool need not, and the two pools' page numbers
// part at the second request: a slot or table taken from the wrong pool
// changes tokens.
TEST_CASE("CUDA executor: a sliding pool that gives back the window's pages changes no request's tokens", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  const TinyModel& m = tiny_windowed_model();
  std::mt19937 rng(1205);
  const std::vector<int> prefix = random_prompt(rng, 40);  // 10 whole pages
  std::vector<PlannedRequest> requests;
  for (int i = 0; i < 8; ++i) {
    PlannedRequest r;
    r.prompt = concat(prefix, random_prompt(rng, 1 + i % 5));
    r.max_tokens = 16;
    r.ignore_eos = true;
    r.sampling.temperature = i % 2 ? 1.0f : 0.0f;
    r.sampling.seed = uint64_t(i);
    requests.push_back(r);
  }
  compute_expected_on_cuda(requests, DType::Float32, m);
  struct Setup {
    int running, pages;
    bool graphs;
  };
  for (const Setup& s : {Setup{4, 0, true}, Setup{4, 0, false}, Setup{1, 64, true}, Setup{4, 20, true}}) {
    const int pages = s.pages;
    INFO(s.running << " running, " << pages << " pages (0: a context per running task), graphs " << s.graphs);
    auto engine = windowed_cuda_engine(s.running, 8, pages, s.graphs);
    const SchedulerStats idle = engine->get_stats();
    REQUIRE(idle.cache.sliding_blocks_total > 0);
    std::vector<PlannedRequest> head(requests.begin(), requests.begin() + 1);
    auto first_logs = run_requests(*engine, head, Submission::Together);
    check_outputs(head, first_logs);
    std::vector<PlannedRequest> second(requests.begin() + 1, requests.begin() + 2);
    auto second_logs = run_requests(*engine, second, Submission::Together);
    check_outputs(second, second_logs);
    if (pages != 20) CHECK(output_of(*second_logs[0]).cached_prompt_tokens == 40);
    std::vector<PlannedRequest> rest(requests.begin() + 2, requests.end());
    auto logs = run_requests(*engine, rest, Submission::Together);
    check_outputs(rest, logs);
    const SchedulerStats stats = require_all_free(*engine);
    CHECK(stats.cache.sliding_blocks_held == 0);
  }
  // n choices of the first prompt (41 tokens: its last page partial, copied on the device).
  std::vector<PlannedRequest> alone;
  for (int i = 0; i < 3; ++i) {
    alone.push_back(requests[1]);
    alone.back().sampling.seed = *requests[1].sampling.seed + uint64_t(i);
  }
  compute_expected_on_cuda(alone, DType::Float32, m);
  auto engine = windowed_cuda_engine(3, 12, 0, true);
  GenerationRequest g;
  g.prompt_ids = requests[1].prompt;
  g.n = 3;
  g.max_tokens = requests[1].max_tokens;
  g.ignore_eos = true;
  g.sampling = requests[1].sampling;
  const std::vector<TaskOutput> outputs = engine->generate_choices(g).wait();
  for (int i = 0; i < 3; ++i) {
    INFO("choice " << i);
    CHECK(outputs[size_t(i)].tokens == alone[size_t(i)].expected);
  }
  CHECK(require_all_free(*engine).cache.sliding_blocks_held == 0);
}

// n choices on the device cache: the forks share the prompt's device pages
// and copy the last partial page on the device (DevicePageCache::copy_page)
// before their first write; each choice must get the sequential loop's tokens
// for its seed + i, and a copy that missed a row, or a write into a page
// still shared, would change some choice's tokens. 4-token pages, prompts of
// 7 (a partial last page) and 8 (none), a cache small enough to preempt.
TEST_CASE("CUDA executor: n choices fork the prompt's device pages and get their sequential tokens", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  std::mt19937 rng(505);
  const int n = 3;
  std::vector<PlannedRequest> prompts(2);
  for (size_t k = 0; k < prompts.size(); ++k) {
    prompts[k].prompt = random_prompt(rng, 7 + int(k));
    prompts[k].max_tokens = 24;
    prompts[k].ignore_eos = true;
    prompts[k].sampling.temperature = 1.0f;
    prompts[k].sampling.top_k = 0;
    prompts[k].sampling.seed = 60 + k;
  }
  // The expected tokens of choice i: the prompt alone with seed + i.
  std::vector<PlannedRequest> alone;
  for (const auto& p : prompts)
    for (int i = 0; i < n; ++i) {
      alone.push_back(p);
      alone.back().sampling.seed = *p.sampling.seed + uint64_t(i);
    }
  compute_expected_on_cuda(alone);
  for (const int pages : {0, 18}) {
    INFO((pages ? "18 pages: preemption" : "a context per running choice"));
    auto engine = cuda_engine(2 * n, 12, pages);
    std::vector<ChoicesResult> results;
    for (const auto& p : prompts) {
      GenerationRequest g;
      g.prompt_ids = p.prompt;
      g.n = n;
      g.max_tokens = p.max_tokens;
      g.ignore_eos = true;
      g.sampling = p.sampling;
      results.push_back(engine->generate_choices(g));
    }
    for (size_t k = 0; k < prompts.size(); ++k) {
      const auto outputs = results[k].wait_for(kWaitTimeout);
      REQUIRE(outputs.has_value());
      for (int i = 0; i < n; ++i) CHECK((*outputs)[size_t(i)].tokens == alone[k * n + size_t(i)].expected);
    }
    const SchedulerStats stats = require_all_free(*engine);
    CHECK(stats.prefill_tokens >= 15);  // each prompt once (7 + 8), more only when preempted
    if (pages == 0) CHECK(stats.prefill_tokens == 15);
  }
}
