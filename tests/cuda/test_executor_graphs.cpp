// The CUDA graphs of the executor: decode steps padded to a few captured
// batch sizes, the metadata upload and the sampling inside the graph, mixed
// prefill + decode steps captured where their shape repeats.
//
// Oracle: the same executor with graphs off (eager launches, no padding).
// Exact (==) comparisons, and why they hold bit for bit:
//  - a graph replays the launches it captured with the same arguments, and
//    every kernel reads its step's inputs from the metadata the graph's own
//    first node copies from the staging buffer: same kernels, same inputs;
//  - padding adds rows, and every kernel but the GEMMs computes each row from
//    that row alone in a fixed order (RMSNorm, RoPE, attention, SwiGLU, the
//    sampler: docs/cuda.md, "Batch invariance"); a GEMM row depends on the
//    row and the algorithm, and a padded batch stays in its row-count bucket
//    (batch_plan.h: every power of two is a captured size), so its rows get
//    the unpadded algorithm. On the emulated device the stand-in cuBLASLt
//    computes every output as one dot product in k order anyway; on a GPU the
//    bucket argument is what holds (test_gemm's invariance cases check it);
//  - a padding row repeats the last real row's token, position and sequence
//    but writes its K/V into a slot no page owns (DevicePageCache's padding
//    slots), so no page's rows change.
#include <catch2/catch.hpp>

#include <algorithm>
#include <deque>

#include <xtensor/xview.hpp>

#include "cuda/batch_plan.h"
#include "cuda/cuda_executor.h"
#include "cuda/device_page_cache.h"
#include "reference/sampling/sampler.h"
#include "reference/synthetic_model.h"
#include "tests/cuda/gpu_test_support.h"
#ifdef ASTRAI_CUDA_EMULATED
#include "cuda/emulation/emulated_device.h"
#endif

using namespace astrai;
using cuda::DType;

namespace {

std::vector<std::vector<int>> prompts_for(int n) {
  std::vector<std::vector<int>> prompts;
  for (int s = 0; s < n; ++s) {
    std::vector<int> p;
    for (int i = 0; i < 2 + s % 3; ++i) p.push_back(1 + (7 * s + 3 * i) % 60);  // the tiny model's vocabulary is 64
    prompts.push_back(p);
  }
  return prompts;
}

// `prompts` (tasks first_task, first_task + 1, ...) prefilled in one batch,
// then decoded together for `steps` greedy steps through forward(). Returns
// every decode step's logits, step by step, row by row; releases the tasks.
std::vector<std::vector<float>> decode_together(cuda::CudaExecutor& executor, cuda::DevicePageCache& cache,
                                                std::vector<std::vector<int>> prompts, int steps, int first_task = 0) {
  const int n = int(prompts.size());
  std::vector<BatchToken> batch;
  for (int s = 0; s < n; ++s) {
    REQUIRE(cache.admit(first_task + s, prompts[size_t(s)]).value() == 0);
    for (int pos = 0; pos < int(prompts[size_t(s)].size()); ++pos)
      batch.push_back({prompts[size_t(s)][size_t(pos)], first_task + s, pos, pos + 1 == int(prompts[size_t(s)].size())});
  }
  std::vector<std::vector<float>> out;
  auto logits = executor.forward(batch, cache.view());
  for (int step = 0; step < steps; ++step) {
    batch.clear();
    for (int s = 0; s < n; ++s) {
      const auto row = xt::view(logits, s);
      const int token = int(std::max_element(row.begin(), row.end()) - row.begin());
      std::vector<int>& seq = prompts[size_t(s)];
      cache.commit(first_task + s, seq);
      seq.push_back(token);
      REQUIRE(cache.reserve(first_task + s, int(seq.size())));
      batch.push_back({token, first_task + s, int(seq.size()) - 1, true});
    }
    logits = executor.forward(batch, cache.view());
    out.emplace_back(logits.begin(), logits.end());
  }
  for (int s = 0; s < n; ++s) cache.release(first_task + s);
  return out;
}

}  // namespace

TEST_CASE("a padded decode batch gives each real row the bits it gets unpadded", "[cuda][graphs]") {
  ASTRAI_REQUIRE_GPU();
  const auto weights = test::tiny_model_weights(41);
  const int steps = 5;
  for (const DType dtype : {DType::Float32, DType::BFloat16}) {
    for (const int n : {3, 5, 6, 11}) {
      INFO(cuda::dtype_name(dtype) << ", " << n << " sequences");
      // Default options: per-bucket GEMM algorithms, not batch_invariant.
      cuda::CudaExecutor graphs(*weights, {dtype, 0, true}), eager(*weights, {dtype, 0, false});
      cuda::DevicePageCache graphs_cache(graphs.config(), 64, 4, dtype), eager_cache(eager.config(), 64, 4, dtype);
      const auto got = decode_together(graphs, graphs_cache, prompts_for(n), steps);
      CHECK(graphs.last_step_rows() == cuda::graph_batch_rows(n));
      CHECK(graphs.last_step_rows() > n);  // every n here pads
      const auto want = decode_together(eager, eager_cache, prompts_for(n), steps);
      CHECK(eager.last_step_rows() == n);
      // The first decode step runs eagerly, the second is captured, the rest replay.
      CHECK(graphs.graph_replays() == steps - 1);
      CHECK(graphs.graph_captures() == 1);
      REQUIRE(got.size() == want.size());
      for (size_t step = 0; step < got.size(); ++step) {
        INFO("decode step " << step);
        CHECK(got[step] == want[step]);
      }
    }
  }
}

TEST_CASE("batch sizes that pad to one captured size share its graph", "[cuda][graphs]") {
  ASTRAI_REQUIRE_GPU();
  const auto weights = test::tiny_model_weights(42);
  cuda::CudaExecutor executor(*weights, {DType::Float32, 0, true});
  cuda::DevicePageCache cache(executor.config(), 96, 4, DType::Float32);
  // A prefill of nine prompts first sizes every buffer (a buffer grown later
  // drops the graphs, which point into the old one).
  decode_together(executor, cache, prompts_for(9), 0, 20);
  decode_together(executor, cache, prompts_for(5), 4, 0);
  CHECK(executor.graph_captures() == 1);
  CHECK(executor.graph_replays() == 3);
  // Seven sequences pad to 8 rows too: every decode step replays the graph
  // captured with five, whose metadata copy must still carry seven page tables.
  const auto seven = decode_together(executor, cache, prompts_for(7), 4, 10);
  CHECK(executor.graph_captures() == 1);
  CHECK(executor.graph_replays() == 3 + 4);
  CHECK(executor.last_step_rows() == 8);

  cuda::CudaExecutor eager(*weights, {DType::Float32, 0, false});
  cuda::DevicePageCache eager_cache(eager.config(), 96, 4, DType::Float32);
  CHECK(decode_together(eager, eager_cache, prompts_for(7), 4, 10) == seven);
}

namespace {

// Kernel launches issued by one call (emulated device only; -1 elsewhere).
template <typename Call>
long launches_of(Call&& call) {
#ifdef ASTRAI_CUDA_EMULATED
  const uint64_t before = emu::counters().kernel_launches;
  call();
  return long(emu::counters().kernel_launches - before);
#else
  call();
  return -1;
#endif
}

struct SampledRun {
  std::vector<std::vector<int>> tokens;  // per decode step, per row
  std::vector<long> launches;            // kernel launches issued per decode step
};

// Three requests through forward_and_sample: seeded (temperature 0.8, top-k
// 50, top-p 0.9), seeded with logprobs, and greedy. With `penalised`, the
// first row carries two bias offsets, and the greedy row bans `step` tokens
// and then, last in the step's adjustment list, the token it chose last: a
// list that grows every step (a graph replaying the list it captured, or
// part of today's, would let the greedy row choose its last token again).
SampledRun sample_together(cuda::CudaExecutor& executor, bool penalised, int steps) {
  const ModelConfig& config = executor.config();
  cuda::DevicePageCache cache(config, 32, 4, executor.dtype());
  std::vector<std::vector<int>> seqs = {{1, 5, 9}, {3, 7}, {11, 4, 8, 15}};
  std::vector<SamplerState> states = {SamplerState({0.8f, 50, 0.9f, 2}), SamplerState({1.0f, 20, 1.0f, 3}),
                                      SamplerState({0.0f, 0, 1.0f, 1})};
  const std::vector<LogitAdjustment> bias = {{7, false, false, -0.5}, {9, false, false, -1.0}};
  std::deque<std::vector<LogitAdjustment>> bans;  // alive until the run ends: RowSampling holds a span
  const auto rules = [&](int step) {
    std::vector<RowSampling> r;
    for (SamplerState& s : states) r.push_back({s.params(), s.next_uniform()});
    r[1].logprobs = 3;
    if (penalised) {
      r[0].adjustments = bias;
      std::vector<LogitAdjustment>& ban = bans.emplace_back();
      for (int i = 0; i < step; ++i)
        if (40 + i != seqs[2].back()) ban.push_back({40 + i, true, false, 0.0});
      ban.push_back({seqs[2].back(), true, false, 0.0});
      r[2].adjustments = ban;
    }
    return r;
  };
  std::vector<BatchToken> batch;
  for (int s = 0; s < 3; ++s) {
    REQUIRE(cache.admit(s, seqs[size_t(s)]).value() == 0);
    for (int pos = 0; pos < int(seqs[size_t(s)].size()); ++pos)
      batch.push_back({seqs[size_t(s)][size_t(pos)], s, pos, pos + 1 == int(seqs[size_t(s)].size())});
  }
  SampledRun run;
  auto sampled = executor.forward_and_sample(batch, cache.view(), rules(0));
  for (int step = 0; step < steps; ++step) {
    batch.clear();
    std::vector<int> tokens;
    for (int s = 0; s < 3; ++s) {
      REQUIRE(sampled[size_t(s)].error == "");
      tokens.push_back(sampled[size_t(s)].token);
      cache.commit(s, seqs[size_t(s)]);
      seqs[size_t(s)].push_back(sampled[size_t(s)].token);
      REQUIRE(cache.reserve(s, int(seqs[size_t(s)].size())));
      batch.push_back({sampled[size_t(s)].token, s, int(seqs[size_t(s)].size()) - 1, true});
    }
    run.tokens.push_back(tokens);
    const auto step_rules = rules(step + 1);
    run.launches.push_back(launches_of([&] { sampled = executor.forward_and_sample(batch, cache.view(), step_rules); }));
    REQUIRE(sampled[1].logprobs.has_value());
  }
  return run;
}

}  // namespace

TEST_CASE("sampling and the metadata upload run inside the replayed graph", "[cuda][graphs]") {
  ASTRAI_REQUIRE_GPU();
  const auto weights = test::tiny_model_weights(43);
  const int steps = 6;
  for (const bool penalised : {false, true}) {
    INFO((penalised ? "a penalised row (adjustments in the graph too)" : "plain rules"));
    cuda::CudaExecutor graphs(*weights, {DType::Float32, 0, true}), eager(*weights, {DType::Float32, 0, false});
    const SampledRun got = sample_together(graphs, penalised, steps);
    const SampledRun want = sample_together(eager, penalised, steps);
    CHECK(got.tokens == want.tokens);  // seeded draws: the same uniforms on the same logits
    if (penalised)  // the greedy row's ban on its last token held at every step
      for (size_t step = 1; step < got.tokens.size(); ++step) CHECK(got.tokens[step][2] != got.tokens[step - 1][2]);
    CHECK(graphs.graph_replays() == steps - 1);
#ifdef ASTRAI_CUDA_EMULATED
    // Decode step 0 runs eagerly, step 1 captures (each captured launch
    // counts once when recorded and once when the graph is launched), steps
    // 2.. replay. The kernels a replay launches outside its graph are
    // replay - (capture - replay): none, the sampling kernels (adjust with a
    // penalised row, sample, logprobs) being in the graph.
    const long eager_step = got.launches[0], capture = got.launches[1], replay = got.launches[2];
    for (int step = 3; step < steps; ++step) CHECK(got.launches[size_t(step)] == replay);
    CHECK(replay - (capture - replay) == 0);
    CHECK(replay == eager_step);  // every kernel of the eager step, no more
#endif
  }
}

TEST_CASE("a mixed prefill + decode step whose shape repeats replays its graph", "[cuda][graphs]") {
  ASTRAI_REQUIRE_GPU();
  const auto weights = test::tiny_model_weights(44);
  // Task 0 decodes while task 1's 20-token prompt arrives in chunks of 4 (as
  // the scheduler's token budget cuts it): each step is 1 decode row and one
  // prefill tile of 4 rows; only the last chunk wants logits of task 1.
  const std::vector<int> first = {1, 2, 3}, second = {9, 8, 7, 6, 5, 4, 3, 2, 1, 10, 11, 12, 13, 14, 15, 16, 17, 18,
                                                     19, 20};
  const auto run = [&](cuda::CudaExecutor& executor) {
    cuda::DevicePageCache cache(executor.config(), 32, 4, DType::Float32);
    std::vector<int> seq = first;
    REQUIRE(cache.admit(0, seq).value() == 0);
    std::vector<BatchToken> batch;
    for (int pos = 0; pos < 3; ++pos) batch.push_back({seq[size_t(pos)], 0, pos, pos == 2});
    auto logits = executor.forward(batch, cache.view());
    REQUIRE(cache.admit(1, second).value() == 0);
    std::vector<std::vector<float>> out;
    for (int chunk = 0; chunk < 5; ++chunk) {
      const auto row = xt::view(logits, 0);
      const int token = int(std::max_element(row.begin(), row.end()) - row.begin());
      cache.commit(0, seq);
      seq.push_back(token);
      REQUIRE(cache.reserve(0, int(seq.size())));
      batch = {{token, 0, int(seq.size()) - 1, true}};
      for (int pos = 4 * chunk; pos < 4 * chunk + 4; ++pos) batch.push_back({second[size_t(pos)], 1, pos, pos == 19});
      logits = executor.forward(batch, cache.view());
      out.emplace_back(logits.begin(), logits.end());
    }
    return out;
  };
  cuda::CudaExecutor graphs(*weights, {DType::Float32, 0, true}), eager(*weights, {DType::Float32, 0, false});
  const auto got = run(graphs);
  // Chunks 0-3 share one shape (5 rows, 1 wanted, 1 decode row, one tile of
  // 4): eager, captured, replayed, replayed; chunk 4 wants 2 rows: eager.
  CHECK(graphs.graph_captures() == 1);
  CHECK(graphs.graph_replays() == 3);
  CHECK(got == run(eager));
}

TEST_CASE("forward() and forward_and_sample() of one shape each replay their own graph", "[cuda][graphs]") {
  ASTRAI_REQUIRE_GPU();
  // forward() steps first, so the shape's first graph samples nothing; the
  // sampled steps after it must capture their own, not replay that one (whose
  // tokens would never be copied back: every row would fall back to the host).
  const auto weights = test::tiny_model_weights(45);
  const auto run = [&](cuda::CudaExecutor& executor, std::vector<int>* host_rows) {
    cuda::DevicePageCache cache(executor.config(), 32, 4, DType::Float32);
    std::vector<std::vector<int>> seqs = {{1, 5, 9}, {3, 7}};
    std::vector<SamplerState> states = {SamplerState({0.0f, 0, 1.0f, 1}), SamplerState({0.8f, 50, 0.9f, 2})};
    std::vector<BatchToken> batch;
    for (int s = 0; s < 2; ++s) {
      REQUIRE(cache.admit(s, seqs[size_t(s)]).value() == 0);
      for (int pos = 0; pos < int(seqs[size_t(s)].size()); ++pos)
        batch.push_back({seqs[size_t(s)][size_t(pos)], s, pos, pos + 1 == int(seqs[size_t(s)].size())});
    }
    std::vector<int> next = {2, 4}, tokens;
    // The prefill sampled, so that the sampler's buffers exist before any
    // graph does (growing them drops the graphs, which would hide the case).
    const auto rules_of = [&] {
      std::vector<RowSampling> rules;
      for (SamplerState& st : states) rules.push_back({st.params(), st.next_uniform()});
      return rules;
    };
    executor.forward_and_sample(batch, cache.view(), rules_of());
    for (int step = 0; step < 6; ++step) {
      batch.clear();
      for (int s = 0; s < 2; ++s) {
        cache.commit(s, seqs[size_t(s)]);
        seqs[size_t(s)].push_back(next[size_t(s)]);
        REQUIRE(cache.reserve(s, int(seqs[size_t(s)].size())));
        batch.push_back({next[size_t(s)], s, int(seqs[size_t(s)].size()) - 1, true});
      }
      if (step < 3) {
        executor.forward(batch, cache.view());  // the fed tokens stay fixed: 2 and 4
        continue;
      }
      const auto sampled = executor.forward_and_sample(batch, cache.view(), rules_of());
      if (host_rows) host_rows->push_back(executor.last_host_sampled_rows());
      for (int s = 0; s < 2; ++s) tokens.push_back(next[size_t(s)] = sampled[size_t(s)].token);
    }
    return tokens;
  };
  cuda::CudaExecutor graphs(*weights, {DType::Float32, 0, true}), eager(*weights, {DType::Float32, 0, false});
  std::vector<int> host_rows;
  CHECK(run(graphs, &host_rows) == run(eager, nullptr));
  CHECK(host_rows == std::vector<int>{0, 0, 0});  // every row sampled on the device
  CHECK(graphs.graph_captures() == 2);            // forward only, and sampled
}

TEST_CASE("a step that grows the sampler's buffers drops the graphs that copy into the old ones", "[cuda][graphs]") {
  ASTRAI_REQUIRE_GPU();
  // Two sequences decode through forward_and_sample (a graph copies their
  // parameters into the sampler's buffers); a 20-token prompt wanting every
  // row's token then grows those buffers (16 rows -> 32); the decode steps
  // after it must not replay a graph that copies into the freed ones.
  const auto weights = test::tiny_model_weights(46);
  const auto run = [&](cuda::CudaExecutor& executor) {
    cuda::DevicePageCache cache(executor.config(), 32, 4, DType::Float32);
    std::vector<std::vector<int>> seqs = {{1, 5, 9}, {3, 7}};
    SamplerState state({0.8f, 50, 0.9f, 7});
    const auto rules_of = [&](size_t n) {
      std::vector<RowSampling> rules;
      for (size_t i = 0; i < n; ++i) rules.push_back({state.params(), state.next_uniform()});
      return rules;
    };
    // The 20-row prompt through forward() first: the activations and logits
    // grow now (dropping no graph yet), so that at step 3 only the sampler grows.
    std::vector<int> prompt(20);
    std::vector<BatchToken> prefill;
    for (int pos = 0; pos < 20; ++pos) prefill.push_back({prompt[size_t(pos)] = 1 + pos, 9, pos, true});
    REQUIRE(cache.admit(9, prompt).value() == 0);
    executor.forward(prefill, cache.view());
    cache.release(9);
    std::vector<BatchToken> batch;
    for (int s = 0; s < 2; ++s) {
      REQUIRE(cache.admit(s, seqs[size_t(s)]).value() == 0);
      for (int pos = 0; pos < int(seqs[size_t(s)].size()); ++pos)
        batch.push_back({seqs[size_t(s)][size_t(pos)], s, pos, pos + 1 == int(seqs[size_t(s)].size())});
    }
    auto sampled = executor.forward_and_sample(batch, cache.view(), rules_of(2));
    std::vector<int> tokens;
    for (int step = 0; step < 6; ++step) {
      if (step == 3) {  // the long prompt again, every row's token sampled
        REQUIRE(cache.admit(9, prompt).value() == 0);
        for (const SampledToken& t : executor.forward_and_sample(prefill, cache.view(), rules_of(20)))
          tokens.push_back(t.token);
        cache.release(9);
      }
      batch.clear();
      for (int s = 0; s < 2; ++s) {
        cache.commit(s, seqs[size_t(s)]);
        seqs[size_t(s)].push_back(sampled[size_t(s)].token);
        tokens.push_back(sampled[size_t(s)].token);
        REQUIRE(cache.reserve(s, int(seqs[size_t(s)].size())));
        batch.push_back({sampled[size_t(s)].token, s, int(seqs[size_t(s)].size()) - 1, true});
      }
      sampled = executor.forward_and_sample(batch, cache.view(), rules_of(2));
      CHECK(executor.last_host_sampled_rows() == 0);
    }
    return tokens;
  };
  cuda::CudaExecutor graphs(*weights, {DType::Float32, 0, true}), eager(*weights, {DType::Float32, 0, false});
  CHECK(run(graphs) == run(eager));
  CHECK(graphs.graph_captures() == 2);  // the decode shape before the growth, and again after it
}
