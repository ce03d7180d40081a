// Executor::forward_and_sample_with_forks (engine/executor/executor.h), where
// the n choices of one prompt draw their first tokens: every token, a sampled
// row's or a fork's, must be what the request's own SamplerState::next draws
// (the reference sampler) from the logits row it names, forward()'s logits of
// the same batch. Exact (==): the reference forward pass gives the same bits
// for the same batch, and both paths apply the same penalties and
// sample_with_uniform to those floats with the same generator's uniform.
#include <optional>
#include <stdexcept>
#include <vector>

#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include "engine/executor/reference_executor.h"
#include "reference/dense_kv_cache.h"
#include "reference/sampling/logprobs.h"
#include "reference/sampling/sampler.h"
#include "tests/engine/scheduler/engine_harness.h"

namespace {

using namespace astrai;

SamplingParams drawn_params() {
  SamplingParams p;
  p.temperature = *rc::gen::element(0.0f, 0.7f, 1.0f);
  p.top_k = *rc::gen::element(0, 5, 50);
  p.seed = *rc::gen::arbitrary<uint64_t>();
  p.presence_penalty = *rc::gen::element(0.0f, 0.5f);
  return p;
}

}  // namespace

TEST_CASE("forward_and_sample_with_forks: every token is its request's own draw from the row it names",
          "[engine][choices]") {
  const test::TinyModel& m = test::tiny_model();
  const ModelConfig& config = m.weights->config;
  ReferenceExecutor executor(m.weights);
  const bool ok = rc::check("rows and forks against SamplerState::next on forward()'s logits", [&] {
    const int n_seq = *rc::gen::inRange(1, 4);
    std::vector<std::vector<int>> prompts;
    std::vector<BatchToken> batch;
    for (int s = 0; s < n_seq; ++s) {
      prompts.push_back(*rc::gen::container<std::vector<int>>(size_t(*rc::gen::inRange(1, 8)),
                                                              rc::gen::inRange(0, config.vocab_size)));
      for (size_t pos = 0; pos < prompts.back().size(); ++pos)
        batch.push_back({prompts.back()[pos], s, int(pos), pos + 1 == prompts.back().size()});
    }
    // Each draw: a sampler for the executor's path and a twin for the oracle's.
    struct Draw {
      int row;
      int logprobs;
      SamplerState state, twin;
    };
    std::vector<Draw> draws;
    for (int s = 0; s < n_seq; ++s) {
      const SamplingParams p = drawn_params();
      draws.push_back({s, *rc::gen::inRange(-1, 3), SamplerState(p, prompts[size_t(s)]), SamplerState(p, prompts[size_t(s)])});
    }
    const int n_forks = *rc::gen::inRange(0, 5);
    for (int j = 0; j < n_forks; ++j) {
      const int row = *rc::gen::inRange(0, n_seq);
      const SamplingParams p = drawn_params();
      draws.push_back({row, *rc::gen::inRange(-1, 3), SamplerState(p, prompts[size_t(row)]),
                       SamplerState(p, prompts[size_t(row)])});
    }
    std::vector<RowSampling> rows;
    std::vector<ForkDraw> forks;
    for (size_t d = 0; d < draws.size(); ++d) {
      SamplerState& st = draws[d].state;
      const RowSampling sampling{st.params(), st.next_uniform(), st.adjustments(), draws[d].logprobs};
      if (d < size_t(n_seq))
        rows.push_back(sampling);
      else
        forks.push_back({size_t(draws[d].row), sampling});
    }

    DenseKVCache cache(config, n_seq);
    const std::vector<SampledToken> tokens = executor.forward_and_sample_with_forks(batch, cache, rows, forks);
    DenseKVCache fresh(config, n_seq);
    const xt::xtensor<float, 2> logits = executor.forward(batch, fresh);
    RC_ASSERT(tokens.size() == draws.size());
    const size_t vocab = logits.shape(1);
    for (size_t d = 0; d < draws.size(); ++d) {
      const std::span<const float> row(logits.data() + size_t(draws[d].row) * vocab, vocab);
      RC_ASSERT(tokens[d].error.empty());
      const int want = draws[d].twin.next(row);
      RC_ASSERT(tokens[d].token == want);
      RC_ASSERT(tokens[d].logprobs.has_value() == (draws[d].logprobs >= 0));
      if (draws[d].logprobs >= 0) {
        const TokenLogprobs lp = token_logprobs(row, want, draws[d].logprobs);
        RC_ASSERT(tokens[d].logprobs->logprob == lp.logprob);
        RC_ASSERT(tokens[d].logprobs->top.size() == lp.top.size());
      }
    }
  });
  CHECK(ok);

  // A fork naming a row that is not wanted is refused.
  DenseKVCache cache(config, 1);
  const std::vector<BatchToken> one = {{1, 0, 0, true}};
  const std::vector<RowSampling> rows(1);
  const std::vector<ForkDraw> past = {{1, {}}};
  CHECK_THROWS_AS(executor.forward_and_sample_with_forks(one, cache, rows, past), std::invalid_argument);
}
