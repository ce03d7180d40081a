// Constrained requests through the engine (reference executor): the mask of a
// request's constraint is filled before each of its tokens and respected by
// the draw, the constraint follows the tokens, n > 1 choices fork it, and a
// constrained request ends cleanly (complete, only EOS left, or a dead end)
// with its reason. Oracles: compacted_reference_tokens (the reference loop
// over the allowed tokens' logits alone, no mask), the sequential reference
// for the free requests beside them, and for an exact-sequence constraint the
// sequence itself.
#include <algorithm>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/engine/scheduler/engine_harness.h"
#include "tests/engine/scheduler/reference_oracle.h"
#include "tests/support/test_only_constraints.h"

namespace {

using namespace astrai;
using namespace astrai::test;

SamplingParams seeded(uint64_t seed, float temperature = 1.0f) {
  SamplingParams s;
  s.temperature = temperature;
  s.top_k = 0;
  s.seed = seed;
  return s;
}

const std::vector<int>& end_ids() { return tiny_model().tokenizer->end_of_generation_ids(); }

// `count` distinct ids in [3, vocab) (never unk, BOS or EOS).
std::vector<int> random_ids(std::mt19937& rng, int count) {
  std::vector<int> all;
  for (int id = 3; id < tiny_model().vocab(); ++id) all.push_back(id);
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(size_t(count));
  std::sort(all.begin(), all.end());
  return all;
}

struct Streamed {
  std::string text;
  std::vector<int> tokens;
};

// A request with an on_token recorder; the record is complete once the result is.
std::shared_ptr<GenerateResult> submit(InferenceEngine& engine, GenerationRequest request,
                                       const std::shared_ptr<Streamed>& streamed) {
  request.on_token = [streamed](const TokenEvent& e) {
    streamed->text += std::string(e.text);
    if (e.token >= 0) streamed->tokens.push_back(e.token);
  };
  return engine.generate_with_request(std::move(request));
}

TaskOutput wait(const std::shared_ptr<GenerateResult>& result) {
  auto out = result->wait_for(kWaitTimeout);
  REQUIRE(out.has_value());
  return *out;
}

}  // namespace

TEST_CASE("id-set constraints beside free requests: each gets its oracle's tokens, streamed equal to whole",
          "[engine][constraint]") {
  const TinyModel& m = tiny_model();
  std::mt19937 rng(2701);
  for (const EngineConfig& config : {paged_config(8, 64), paged_config(4, 6), contiguous_config(6, 64)}) {
    InferenceEngine engine(m.weights, m.tokenizer, config);
    struct Planned {
      std::vector<int> prompt;
      SamplingParams sampling;
      std::vector<int> ids;  // empty: free
      bool can_end = false;
      int logprobs = -1;
      std::vector<int> expected;
      std::vector<TokenLogprobs> expected_logprobs;
      std::shared_ptr<GenerateResult> result;
      std::shared_ptr<Streamed> streamed = std::make_shared<Streamed>();
    };
    std::vector<Planned> planned;
    for (int i = 0; i < 10; ++i) {
      Planned p;
      p.prompt = random_prompt(rng, 1 + int(rng() % 12));
      p.sampling = seeded(100 + uint64_t(i), i % 3 == 0 ? 0.0f : 1.0f);
      if (i % 4 != 3) p.ids = random_ids(rng, 1 + int(rng() % 40));  // three in four constrained
      p.can_end = i % 2 == 0;
      p.logprobs = i % 5 == 0 ? 3 : -1;
      planned.push_back(std::move(p));
    }
    const int max_tokens = 14;
    for (Planned& p : planned) {
      if (p.ids.empty()) {
        p.expected = reference_tokens(*m.weights, *m.tokenizer, p.prompt, max_tokens, p.sampling, false, {},
                                      p.logprobs, &p.expected_logprobs);
      } else {
        std::vector<int> allowed = p.ids;
        if (p.can_end) allowed.insert(allowed.end(), end_ids().begin(), end_ids().end());
        std::sort(allowed.begin(), allowed.end());
        p.expected = compacted_reference_tokens(*m.weights, *m.tokenizer, p.prompt, max_tokens, p.sampling,
                                                [&](const std::vector<int>&) { return allowed; }, false, p.logprobs,
                                                &p.expected_logprobs);
      }
      GenerationRequest g;
      g.prompt_ids = p.prompt;
      g.max_tokens = max_tokens;
      g.sampling = p.sampling;
      g.logprobs = p.logprobs;
      if (!p.ids.empty()) g.constraint = compiled(IdSetConstraint(p.ids, end_ids(), p.can_end));
      p.result = submit(engine, std::move(g), p.streamed);
    }
    for (Planned& p : planned) {
      const TaskOutput out = wait(p.result);
      INFO("ids " << p.ids.size() << ", can_end " << p.can_end << ", temperature " << p.sampling.temperature);
      CHECK(out.tokens == p.expected);
      for (int token : out.tokens)
        if (!p.ids.empty() && std::find(p.ids.begin(), p.ids.end(), token) == p.ids.end())
          CHECK((p.can_end && std::find(end_ids().begin(), end_ids().end(), token) != end_ids().end()));
      CHECK(out.reason == reference_reason(*m.tokenizer, p.expected, max_tokens));
      CHECK(p.streamed->text == out.text);  // streamed output equals the whole
      CHECK(p.streamed->tokens == out.tokens);
      if (p.logprobs >= 0) {  // the raw log-softmax, mask or not
        REQUIRE(out.logprobs.size() == p.expected_logprobs.size());
        for (size_t k = 0; k < out.logprobs.size(); ++k) CHECK(out.logprobs[k].logprob == p.expected_logprobs[k].logprob);
      }
    }
    require_all_free(engine);
  }
}

TEST_CASE("an exact-sequence constraint gives the sequence and ends complete, only EOS left",
          "[engine][constraint]") {
  const TinyModel& m = tiny_model();
  std::mt19937 rng(99);
  InferenceEngine engine(m.weights, m.tokenizer, paged_config(8, 64));
  for (int trial = 0; trial < 6; ++trial) {
    std::vector<int> sequence = random_ids(rng, 1 + int(rng() % 9));
    std::shuffle(sequence.begin(), sequence.end(), rng);
    GenerationRequest g;
    g.prompt_ids = random_prompt(rng, 5);
    g.max_tokens = 20;
    g.sampling = seeded(uint64_t(trial), trial % 2 ? 1.5f : 0.0f);
    g.constraint = compiled(SequenceConstraint(sequence, end_ids()));
    auto streamed = std::make_shared<Streamed>();
    const TaskOutput out = wait(submit(engine, g, streamed));
    CHECK(out.tokens == sequence);  // EOS would be the only token left: not drawn
    CHECK(out.reason == FinishReason::ConstraintComplete);
    CHECK(streamed->text == out.text);

    // ignore_eos: EOS is not a stop token, so it is drawn, and ends the constraint.
    g.ignore_eos = true;
    const TaskOutput drawn = wait(engine.generate_with_request(g));
    std::vector<int> with_eos = sequence;
    with_eos.push_back(end_ids().front());
    CHECK(std::find(end_ids().begin(), end_ids().end(), drawn.tokens.back()) != end_ids().end());
    with_eos.back() = drawn.tokens.back();
    CHECK(drawn.tokens == with_eos);
    CHECK(drawn.reason == FinishReason::ConstraintComplete);

    // Shorter max_tokens than the sequence: Length, a prefix of it.
    g.ignore_eos = false;
    g.max_tokens = int(sequence.size()) > 1 ? int(sequence.size()) - 1 : 1;
    const TaskOutput cut = wait(engine.generate_with_request(g));
    if (sequence.size() > 1) {
      CHECK(cut.reason == FinishReason::Length);
      CHECK(cut.tokens == std::vector<int>(sequence.begin(), sequence.end() - 1));
    }
  }
  require_all_free(engine);
}

TEST_CASE("a dead end ends the request with an error naming it; a constraint with no first token is refused",
          "[engine][constraint]") {
  const TinyModel& m = tiny_model();
  std::mt19937 rng(5);
  InferenceEngine engine(m.weights, m.tokenizer, paged_config(4, 64));
  const std::vector<int> sequence = random_ids(rng, 4);
  GenerationRequest g;
  g.prompt_ids = random_prompt(rng, 6);
  g.max_tokens = 30;
  g.sampling = seeded(1);
  g.constraint = compiled(SequenceConstraint(sequence, end_ids(), /*ends=*/false));
  const TaskOutput out = wait(engine.generate_with_request(g));
  CHECK(out.tokens == sequence);
  CHECK(out.reason == FinishReason::Error);
  CHECK(out.error.find("allows no next token after 4 tokens") != std::string::npos);

  g.constraint = compiled(SequenceConstraint({}, end_ids(), /*ends=*/false));  // nothing, ever
  CHECK_THROWS_AS(engine.generate_with_request(g), std::invalid_argument);
  g.n = 3;
  CHECK_THROWS_AS(engine.generate_choices(g), std::invalid_argument);
  require_all_free(engine);
}

TEST_CASE("n constrained choices fork the state: choice i gets its oracle's tokens with seed + i",
          "[engine][constraint][choices]") {
  const TinyModel& m = tiny_model();
  std::mt19937 rng(31);
  for (const EngineConfig& config : {paged_config(8, 64), contiguous_config(8, 64)}) {
    InferenceEngine engine(m.weights, m.tokenizer, config);
    const std::vector<int> ids = random_ids(rng, 25);
    GenerationRequest g;
    g.prompt_ids = random_prompt(rng, 7);
    g.max_tokens = 12;
    g.sampling = seeded(700);
    g.n = 4;
    g.constraint = compiled(IdSetConstraint(ids, end_ids(), false));
    auto outputs = engine.generate_choices(g).wait_for(kWaitTimeout);
    REQUIRE(outputs.has_value());
    std::vector<std::vector<int>> seen;
    for (int i = 0; i < g.n; ++i) {
      SamplingParams s = g.sampling;
      s.seed = *s.seed + uint64_t(i);
      const std::vector<int> expected = compacted_reference_tokens(
          *m.weights, *m.tokenizer, *g.prompt_ids, g.max_tokens, s, [&](const std::vector<int>&) { return ids; });
      CHECK((*outputs)[size_t(i)].tokens == expected);
      seen.push_back(expected);
    }
    CHECK(seen[0] != seen[1]);  // the choices differ, so a shared state or seed would show

    // A sequence: every choice follows its own copy of the state to the end.
    const std::vector<int> sequence = random_ids(rng, 5);
    g.constraint = compiled(SequenceConstraint(sequence, end_ids()));
    auto choices = engine.generate_choices(g).wait_for(kWaitTimeout);
    REQUIRE(choices.has_value());
    for (const TaskOutput& out : *choices) {
      CHECK(out.tokens == sequence);
      CHECK(out.reason == FinishReason::ConstraintComplete);
    }
    require_all_free(engine);
  }
}
