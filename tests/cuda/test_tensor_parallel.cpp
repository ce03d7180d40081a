// Tensor parallelism on emulated devices (docs/tensor-parallel.md): this
// test process is rank 0 (a TensorParallelExecutor), and the other ranks are
// `astrai rank-worker` processes it starts (ASTRAI_CLI), each with its own
// emulated device and memory, joined by the emulated NCCL.
//
// Oracles:
//  - the reference (reference/forward) on the same file's weights: a
//    prompt's logits in one batch and 8 decode steps teacher-forced, within
//    the float32 tolerance of the one-GPU executor's tests (1e-4 of |logit|
//    + the row's mean |logit|), and the greedy tokens on the decided steps.
//    The bound holds for TP as for one GPU because the all-reduce only
//    regroups the same float32 products: a row-parallel dot product of n
//    terms becomes W partial sums of n/W terms added in rank order, another
//    summation order of the same terms, whose error bound (Higham's
//    gamma_n times the sum of |terms|) is the one-GPU order's;
//  - TP 1 (the one-GPU executor) against TP 2 and 4: the same, twice the bound;
//  - quantized files (Q8_0, Q4_K) at 2 ranks: the blocks sliced by rank, a
//    slice that would split blocks decoded on its rank instead;
//  - batching: requests through InferenceEngine on the group and its cache
//    (a cache small enough to preempt, prompts sharing prefixes, n choices
//    forking pages with copy-on-write) get exactly the tokens the sequential
//    loop gives each alone on the same group. Exact because every rank is
//    batch invariant (one GEMM algorithm per shape; cuda_batching says why)
//    and the all-reduce adds elementwise in rank order, so a row's bits do
//    not depend on its batch; a page copy the other ranks missed, or a plan
//    they ran differently, changes some request's tokens.
#include <cuda_runtime_api.h>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <random>

#include "cuda/cuda_executor.h"
#include "cuda/device_page_cache.h"
#include "cuda/tensor_parallel/tensor_parallel_executor.h"
#include "engine/distributed/tensor_parallel_launch.h"
#include "engine/model_files/gguf/gguf_model.h"
#include "engine/model_files/load_model.h"
#include "engine/tokenizer/synthetic_tokenizer.h"
#include "reference/dense_kv_cache.h"
#include "reference/forward.h"
#include "reference/generate.h"
#include "reference/synthetic_model.h"
#include "tests/cuda/cuda_expected.h"
#include "tests/cuda/cuda_generate.h"
#include "tests/cuda/gpu_test_support.h"
#include "tests/engine/scheduler/engine_harness.h"
#include "tests/support/greedy_margins.h"
#include "tests/support/routing_margins.h"
#include "tests/support/shared_data.h"

namespace {

using namespace astrai;
using namespace astrai::test;
using cuda::DType;

constexpr double kTolerance = 1e-4;  // the one-GPU executor's float32 bound against the reference (see above)

CudaOptions f32_invariant() {
  CudaOptions options{DType::Float32, 0, true};
  options.batch_invariant = true;
  return options;
}

// `weights` as a float32 GGUF the ranks open, named after `name`.
std::filesystem::path write_model(const ModelWeights& weights, const std::string& name) {
  const auto path = scratch_dir() / ("tp-" + name + ".gguf");
  write_gguf_model(path.string(), weights, make_synthetic_tokenizer(weights.config.vocab_size), GgufDType::F32,
                   "tp-" + name);
  return path;
}

// A group of `world` ranks on the model at `path`: this process is rank 0.
std::unique_ptr<Executor> group(const std::filesystem::path& path, int world, CudaOptions options = f32_invariant()) {
  const OpenedModel opened = open_model(path.string());
  if (world == 1) return std::make_unique<cuda::CudaExecutor>(opened.weights, options);
  const char* cli = std::getenv("ASTRAI_CLI");
  REQUIRE(cli != nullptr);
  TensorParallelLaunch launch;
  launch.world = world;
  TensorParallelOptions tp;
  tp.launch = resolve_tensor_parallel_launch(launch, [](const char*) -> const char* { return nullptr; });
  tp.rank_command = {cli, "rank-worker", "--model", path.string(), "--tensor-parallel", std::to_string(world)};
  tp.startup_timeout_s = 300;
  return std::make_unique<cuda::TensorParallelExecutor>(opened.weights, options, std::move(tp));
}

// Tensor parallelism needs a GPU per rank: one GPU cannot be two NCCL
// ranks. The emulated build has eight devices.
#define REQUIRE_DEVICES(n)                                                                              \
  do {                                                                                                  \
    int astrai_devices_ = 0;                                                                            \
    if (cudaGetDeviceCount(&astrai_devices_) != cudaSuccess || astrai_devices_ < (n)) {                 \
      WARN("SKIPPED: " << (astrai_devices_ == 1 ? "one CUDA device" : "too few CUDA devices")           \
                       << ": tensor parallelism over " << (n) << " ranks needs " << (n) << ", this machine has " \
                       << astrai_devices_ << " (NCCL cannot make one GPU two ranks)");                     \
      return;                                                                                           \
    }                                                                                                   \
  } while (0)

std::unique_ptr<KVCache> cache_of(const Executor& executor, int n_pages, int page_size) {
  return make_cuda_kv_cache(executor, n_pages, page_size);
}

// The prompt's logits in one batch, then `steps` decode steps teacher-forced
// with the reference's greedy tokens: every row of logits, in order.
std::vector<std::vector<float>> logits_of(Executor& executor, KVCache& cache, const std::vector<int>& prompt,
                                          const std::vector<int>& forced) {
  std::vector<std::vector<float>> rows;
  REQUIRE(cache.admit(0, prompt).value() == 0);
  std::vector<BatchToken> batch;
  for (int pos = 0; pos < int(prompt.size()); ++pos) batch.push_back({prompt[size_t(pos)], 0, pos, true});
  const auto all = executor.forward(batch, cache.view());
  for (size_t r = 0; r < all.shape(0); ++r) rows.emplace_back(all.data() + r * all.shape(1), all.data() + (r + 1) * all.shape(1));
  std::vector<int> tokens = prompt;
  cache.commit(0, tokens);
  for (const int t : forced) {
    tokens.push_back(t);
    REQUIRE(cache.reserve(0, int(tokens.size())));
    const BatchToken row{t, 0, int(tokens.size()) - 1, true};
    const auto one = executor.forward(std::span<const BatchToken>(&row, 1), cache.view());
    rows.emplace_back(one.begin(), one.end());
    cache.commit(0, tokens);
  }
  cache.release(0);
  return rows;
}

struct Shape {
  std::string name;
  ModelConfig config;
  bool tied = false;
  // The weights': every greedy step and expert choice decided beyond the
  // bound (qwen2moe's seed 31 has a step within it, so 32).
  uint64_t seed = 31;
};

// Llama with grouped-query attention (2 KV heads: replicated at 4 ranks),
// Qwen 2's q/k/v biases, Qwen 3's per-head q/k norms with its own head
// width, a classifier tied to the embedding; Qwen 3 MoE (each rank a slice
// of every expert) and Qwen 2 MoE (its shared expert sliced too; GGUF has
// no dense layers among sparse ones, test_cuda_executor mixes them), and
// gpt-oss.
std::vector<Shape> shapes() {
  ModelConfig llama{.dim = 32, .hidden_dim = 64, .n_layers = 2, .n_heads = 4, .n_kv_heads = 2, .vocab_size = 300,
                    .max_seq_len = 64};
  ModelConfig qwen2 = llama;
  qwen2.options.qkv_bias = true;
  qwen2.rope_layout = RopeLayout::RotateHalf;
  ModelConfig qwen3 = llama;
  qwen3.options.qk_norm = true;
  qwen3.explicit_head_dim = 16;  // q_dim 64 != dim 32
  qwen3.n_heads = 8;
  qwen3.n_kv_heads = 4;
  qwen3.rope_layout = RopeLayout::RotateHalf;
  ModelConfig qwen3moe = qwen3;
  qwen3moe.options.moe = MoeModule::Mlp;
  qwen3moe.moe.n_experts = 6;
  qwen3moe.moe.n_experts_used = 2;
  qwen3moe.moe.expert_hidden_dim = 16;
  qwen3moe.moe.norm_topk_prob = true;
  ModelConfig qwen2moe = qwen2;
  qwen2moe.options.moe = MoeModule::Mlp;
  qwen2moe.options.shared_expert = true;
  qwen2moe.moe.n_experts = 4;
  qwen2moe.moe.n_experts_used = 2;
  qwen2moe.moe.expert_hidden_dim = 8;
  qwen2moe.moe.shared_expert_hidden_dim = 24;
  // gpt-oss whole: q/k/v and output biases, sinks (sliced by query head),
  // alternating windows, YaRN, top-4-then-softmax routing with the router's
  // bias, each expert's gate/up biases (sliced with its rows) and down bias
  // (rank 0's alone: the ranks' partial sums add it once), the clamped SwiGLU.
  ModelConfig gpt_oss = llama;
  gpt_oss.rope_layout = RopeLayout::RotateHalf;
  gpt_oss.options.moe = MoeModule::GptOss;
  gpt_oss.options.router_bias = gpt_oss.options.expert_biases = true;
  gpt_oss.options.qkv_bias = gpt_oss.options.out_bias = gpt_oss.options.attention_sinks = true;
  gpt_oss.moe.n_experts = 8;
  gpt_oss.moe.n_experts_used = 4;
  gpt_oss.moe.expert_hidden_dim = 16;
  gpt_oss.moe.routing = ExpertRouting::TopKSoftmax;
  gpt_oss.moe.swiglu_limit = 7.0f;  // gpt-oss's, the one llama.cpp's GGUF files carry
  gpt_oss.sliding_window = 5;
  gpt_oss.sliding_layers = {true, false};
  gpt_oss.rope_theta = 150000.0f;
  gpt_oss.rope_scaling = RopeScaling{.factor = 32.0f, .original_context = 16, .kind = RopeScalingKind::Yarn,
                                     .truncate = false};
  return {{"llama", llama},       {"qwen2", qwen2},       {"qwen3", qwen3}, {"tied", llama, true},
          {"qwen3moe", qwen3moe, false, 31}, {"qwen2moe", qwen2moe, false, 32}, {"gpt-oss", gpt_oss, false, 33}};
}

// The model at `path` on TP 1, then on each of `worlds`, against the
// reference on the file's weights decoded: the prompt's logits and 8
// teacher-forced decode steps, then the free-running greedy tokens.
// `rank0_holds`: what the description of rank 0's weights must say at 2 or more ranks.
void check_group_against_reference(const std::filesystem::path& path, std::vector<int> worlds,
                                   const std::string& label, const std::string& rank0_holds = "") {
  const std::vector<int> prompt = {1, 200, 201, 202, 7, 99, 4, 250, 17, 3, 60, 111};  // 12 rows: above the mat-vec's 8
  const auto weights = std::make_shared<const ModelWeights>(load_model(path.string()).weights);
  // The reference: the prompt's logits, and 8 greedy steps' logits and margins.
  DenseKVCache dense(weights->config, 1);
  std::vector<BatchToken> batch;
  for (int pos = 0; pos < int(prompt.size()); ++pos) batch.push_back({prompt[size_t(pos)], 0, pos, true});
  const auto want_prompt = forward(*weights, batch, dense);
  GenerateOptions options;
  options.max_new_tokens = 8;
  std::vector<GreedyStep> steps;
  std::vector<std::vector<float>> want;
  for (size_t r = 0; r < want_prompt.shape(0); ++r)
    want.emplace_back(want_prompt.data() + r * want_prompt.shape(1), want_prompt.data() + (r + 1) * want_prompt.shape(1));
  const TokenChooser record = recording_argmax(steps);
  // generate()'s first row is the prompt's last (already in `want`); then one per decode step.
  bool first = true;
  const auto greedy = generate(*weights, prompt, options, [&](std::span<const float> row) {
    if (!first) want.emplace_back(row.begin(), row.end());
    first = false;
    return record(row);
  });
  const std::vector<int> forced(greedy.begin(), greedy.end() - 1);  // the last token is not fed back
  REQUIRE(want.size() == prompt.size() + forced.size());
  REQUIRE(decided_steps(steps, 2 * kTolerance) == steps.size());  // every step decided beyond the bound
  std::vector<int> sequence(prompt);
  sequence.insert(sequence.end(), forced.begin(), forced.end());
  REQUIRE(routing_margins(*weights, sequence).back() >= 2 * kTolerance);  // every expert choice too

  std::vector<std::vector<float>> one_gpu;
  worlds.insert(worlds.begin(), 1);
  for (const int world : worlds) {
    INFO(label << ", " << world << " ranks");
    auto executor = group(path, world);
    if (world > 1 && !rank0_holds.empty())
      CHECK_THAT(dynamic_cast<const cuda::TensorParallelExecutor&>(*executor).rank0().weights_description(),
                 Catch::Contains(rank0_holds));
    auto cache = cache_of(*executor, 16, 8);
    const auto got = logits_of(*executor, *cache, prompt, forced);
    REQUIRE(got.size() == want.size());
    for (size_t r = 0; r < got.size(); ++r) {
      INFO("row " << r << " (the prompt's first " << prompt.size() << ", then decode steps)");
      CHECK(compare(got[r], want[r], kTolerance) == "");
      if (world == 1) continue;
      CHECK(compare(got[r], one_gpu[r], 2 * kTolerance) == "");
    }
    if (world == 1) one_gpu = got;
    // Free-running greedy tokens, through graphs and the group's own cache.
    CHECK(cuda_generate(*executor, *cache, prompt, options, [](std::span<const float> row) { return argmax(row); }) ==
          greedy);
  }
}

}  // namespace

TEST_CASE("tensor parallel: 2 and 4 ranks give the reference's logits and greedy tokens", "[cuda][tensor_parallel]") {
  ASTRAI_REQUIRE_GPU();
  REQUIRE_DEVICES(4);
  for (const Shape& s : shapes()) {
    INFO(s.name);
    ModelWeights w = make_synthetic_weights(s.config, s.seed);
    if (s.tied) w.classifier = w.token_embedding;
    check_group_against_reference(write_model(w, s.name), {2, 4}, s.name);
  }
}

TEST_CASE("tensor parallel: quantized files keep their blocks on 2 ranks and match the reference",
          "[cuda][tensor_parallel]") {
  ASTRAI_REQUIRE_GPU();
  REQUIRE_DEVICES(2);
  // Rows of whole 256-weight blocks. At 2 ranks a rank's w_down columns (256)
  // are whole Q4_K blocks and its wo columns (128) are not: that matrix is
  // decoded on the rank instead; Q8_0's 32-weight blocks divide both.
  ModelConfig c{.dim = 256, .hidden_dim = 512, .n_layers = 2, .n_heads = 4, .n_kv_heads = 2, .vocab_size = 300,
                .max_seq_len = 64};
  // Kept on rank 0: the embedding, the classifier and per layer q, k, v, gate, up, down, and o for Q8_0.
  struct Case {
    GgufDType dtype;
    const char* name;
    const char* kept;
  };
  for (const Case& k : {Case{GgufDType::Q8_0, "q8_0", "16 matrices quantized (Q8_0 16)"},
                        Case{GgufDType::Q4_K, "q4_k", "14 matrices quantized (Q4_K 14)"}}) {
    const auto path = scratch_dir() / (std::string("tp-") + k.name + ".gguf");
    write_gguf_model(path.string(), synthetic_model_source(c, 5, false), make_synthetic_tokenizer(c.vocab_size),
                     k.dtype, "tp-quantized");
    check_group_against_reference(path, {2}, k.name, k.kept);
  }
}

namespace {

std::vector<int> concat(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

TEST_CASE("tensor parallel: batches with preemption, prefix hits and forks get their sequential tokens",
          "[cuda][tensor_parallel]") {
  ASTRAI_REQUIRE_GPU();
  REQUIRE_DEVICES(4);
  const TinyModel& m = tiny_model();
  const auto path = write_model(*m.weights, "tiny");
  for (const int world : {2, 4}) {
    INFO(world << " ranks");
    std::mt19937 rng(4040 + world);
    // Random requests, greedy and seeded; a prefix shared by some; n choices of two prompts.
    auto requests = random_requests(rng, 8, {.min_prompt = 10, .max_prompt = 24, .min_tokens = 12, .max_tokens = 30,
                                             .sampled_fraction = 0.5, .cancelled_fraction = 0.2});
    const std::vector<int> prefix = random_prompt(rng, 18);
    for (int i = 0; i < 3; ++i) {
      PlannedRequest r;
      r.prompt = concat(prefix, random_prompt(rng, 1 + i));
      r.max_tokens = 12;
      r.sampling.temperature = i % 2 ? 1.0f : 0.0f;
      r.sampling.seed = uint64_t(i);
      requests.push_back(r);
    }
    const int n = 3;
    PlannedRequest forked;
    forked.prompt = random_prompt(rng, 7);  // a partial last page: the forks copy it on first write
    forked.max_tokens = 16;
    forked.ignore_eos = true;
    forked.sampling.temperature = 1.0f;
    forked.sampling.top_k = 0;
    forked.sampling.seed = 90;
    std::vector<PlannedRequest> alone;
    for (int i = 0; i < n; ++i) {
      alone.push_back(forked);
      alone.back().sampling.seed = 90 + uint64_t(i);
    }
    auto executor = group(path, world);
    {
      auto cache = cache_of(*executor, 64, 4);
      compute_expected_on(*executor, *cache, requests);
      compute_expected_on(*executor, *cache, alone);
    }
    // 20 pages of 4 tokens: one whole context (16) and a little more, so requests preempt.
    auto cache = cache_of(*executor, 20, 4);
    InferenceEngine engine(std::move(executor), std::move(cache), m.tokenizer, paged_config(6, 16, 20));
    auto logs = run_requests(engine, requests, Submission::Together);
    check_outputs(requests, logs);
    GenerationRequest g;
    g.prompt_ids = forked.prompt;
    g.n = n;
    g.max_tokens = forked.max_tokens;
    g.ignore_eos = true;
    g.sampling = forked.sampling;
    const ChoicesResult choices = engine.generate_choices(g);
    const auto outputs = choices.wait_for(kWaitTimeout);
    REQUIRE(outputs.has_value());
    REQUIRE(outputs->size() == size_t(n));
    for (int i = 0; i < n; ++i) {
      INFO("choice " << i);
      CHECK((*outputs)[size_t(i)].tokens == alone[size_t(i)].expected);
    }
    const SchedulerStats stats = require_all_free(engine);
    INFO("preemptions " << stats.preemptions << ", prefix hit tokens " << stats.prefix_hit_tokens);
    CHECK(stats.preemptions > 0);
    CHECK(stats.prefix_hit_tokens > 0);
  }
}

TEST_CASE("tensor parallel: a model the ranks do not divide is refused before any rank starts",
          "[cuda][tensor_parallel]") {
  ASTRAI_REQUIRE_GPU();
  const TinyModel& m = tiny_model();
  const auto path = write_model(*m.weights, "tiny-refused");
  // 4 query heads over 3 ranks: refused before a rank starts (no process to wait for).
  CHECK_THROWS_WITH(group(path, 3), Catch::Contains("tensor parallel 3 does not divide the model") &&
                                        Catch::Contains("4 query heads"));
}
