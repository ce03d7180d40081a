// Speculation is lossless: generate_speculative() returns generate()'s tokens
// for every model, sampler and proposer. The oracle is generate(), the
// sequential loop, which shares no code with the speculative loop but the
// forward pass and the sampler; what this checks is the speculative loop's
// bookkeeping (which rows are drawn, in what order, which proposals are kept,
// where the next pass starts, how the cache's rejected positions are
// overwritten, where generation stops) and verify_proposals()' rule.
//
// Why equality is exact, bit for bit, even at temperature > 0: the reference
// scores every row by itself (linear() is a row-by-row sgemv, attention walks
// one query at a time), so a position's logits do not depend on how many
// rows share its forward pass; a stale K/V row of a rejected proposal sits at
// a position past the query's and is overwritten before any query reaches it;
// and verify_proposals() draws the same rows with the same uniforms in the
// same order as the sequential loop.
#include <algorithm>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "engine/speculative/ngram_proposer.h"
#include "reference/sampling/sampler.h"
#include "reference/sampling/verify_proposals.h"
#include "reference/speculative_generate.h"
#include "reference/synthetic_model.h"
#include "tests/reference/draw_moe.h"

using namespace astrai;

namespace speculative_test {

// A number in [lo, hi) drawn over the whole range from the first case on
// (rc::gen::inRange narrows to small values while RapidCheck's size is small).
int drawn(int lo, int hi) { return *rc::gen::resize(100, rc::gen::inRange(lo, hi)); }

// A small model with today's options drawn: GQA, Qwen's biases and q/k norms,
// sliding layers, gpt-oss's sinks, sparse layers or Gemma's sandwich norms.
ModelConfig draw_model_config() {
  ModelConfig c;
  c.n_kv_heads = drawn(1, 3);
  c.n_heads = c.n_kv_heads * *rc::gen::element(1, 2);
  c.dim = c.n_heads * *rc::gen::element(2, 4, 8);
  c.hidden_dim = drawn(4, 24);
  c.n_layers = drawn(1, 3);
  c.vocab_size = drawn(2, 24);
  c.max_seq_len = drawn(3, 40);
  c.options.qkv_bias = *rc::gen::arbitrary<bool>();
  c.options.qk_norm = *rc::gen::arbitrary<bool>();
  c.options.attention_sinks = *rc::gen::arbitrary<bool>();
  if (*rc::gen::arbitrary<bool>()) {
    c.sliding_window = drawn(1, c.max_seq_len);
    c.sliding_layers = *rc::gen::container<std::vector<bool>>(size_t(c.n_layers), rc::gen::arbitrary<bool>());
  }
  if (*rc::gen::arbitrary<bool>())
    test::draw_moe_options(c, 4, 6);
  else
    c.options.sandwich_norms = *rc::gen::arbitrary<bool>();  // Gemma 3's (dense only)
  return c;
}

// Greedy, or sampling with the filters and penalties drawn, always seeded.
SamplingParams draw_sampling(int vocab) {
  SamplingParams p;
  p.seed = *rc::gen::arbitrary<std::uint64_t>();
  p.temperature = *rc::gen::element(0.0f, 0.5f, 1.0f, 2.0f);
  p.top_k = *rc::gen::element(0, 1, 3, 50);
  p.top_p = *rc::gen::element(1.0f, 0.9f, 0.5f);
  p.min_p = *rc::gen::element(0.0f, 0.1f);
  p.presence_penalty = *rc::gen::element(0.0f, 0.7f);
  p.repetition_penalty = *rc::gen::element(1.0f, 1.3f);
  if (*rc::gen::arbitrary<bool>()) p.logit_bias = {{drawn(0, vocab), *rc::gen::element(-5.0f, 5.0f)}};
  return p;
}

enum class Proposer { Ngram, AllRight, AllWrong, OneWrong, Random };

}  // namespace speculative_test

TEST_CASE("speculation returns generate()'s tokens for any model sampler and proposer", "[reference][speculative]") {
  using namespace speculative_test;
  rc::prop("generate_speculative == generate", [] {
    const ModelConfig config = draw_model_config();
    const ModelWeights weights = make_synthetic_weights(config, *rc::gen::arbitrary<std::uint64_t>());
    const int vocab = config.vocab_size;
    // Mostly room to generate in; sometimes a prompt that (nearly) fills the context.
    const int longest = *rc::gen::element(1, 1, 1, 2) == 1 ? std::max(1, config.max_seq_len / 2) : config.max_seq_len;
    const auto prompt =
        *rc::gen::container<std::vector<int>>(size_t(drawn(1, longest + 1)), rc::gen::resize(100, rc::gen::inRange(0, vocab)));
    GenerateOptions options;
    options.max_new_tokens = drawn(0, config.max_seq_len + 3);
    if (*rc::gen::element(0, 0, 1) == 1)  // a stop token ends most generations early in a vocabulary this small
      options.stop_tokens = *rc::gen::container<std::vector<int>>(size_t(drawn(1, 3)), rc::gen::resize(100, rc::gen::inRange(0, vocab)));
    const SamplingParams params = draw_sampling(vocab);

    SamplerState sequential_sampler(params, prompt);
    const auto expected = generate(weights, prompt, options,
                                   [&](std::span<const float> row) { return sequential_sampler.next(row); });

    const auto proposer = *rc::gen::element(Proposer::Ngram, Proposer::AllRight, Proposer::AllWrong,
                                            Proposer::OneWrong, Proposer::Random);
    NgramOptions ngram;
    ngram.min_match = drawn(1, 3);
    ngram.max_match = ngram.min_match + drawn(0, 3);
    ngram.tokens = drawn(1, 7);
    const int wrong_at = drawn(0, 6);
    const auto random_tokens = *rc::gen::container<std::vector<int>>(64, rc::gen::resize(100, rc::gen::inRange(0, vocab)));
    size_t random_next = 0;
    // The oracles know the answer: the sequential tokens after `context`.
    const auto propose = [&](std::span<const int> context, int most) {
      if (proposer == Proposer::Ngram) return propose_ngram(context, ngram, most);
      std::vector<int> out;
      for (size_t i = context.size() - prompt.size(); i < expected.size() && int(out.size()) < most; ++i) {
        int t = expected[i];
        const bool wrong = proposer == Proposer::AllWrong || (proposer == Proposer::OneWrong && int(out.size()) == wrong_at);
        if (wrong) t = (t + 1) % vocab;
        if (proposer == Proposer::Random) t = random_tokens[random_next++ % random_tokens.size()];
        out.push_back(t);
      }
      return out;
    };
    SamplerState speculative_sampler(params, prompt);
    SpeculationCounts counts;
    const auto got = generate_speculative(
        weights, prompt, options, [&](std::span<const float> row) { return speculative_sampler.next(row); }, propose,
        &counts);
    static const char* const kNames[] = {"ngram", "all right", "all wrong", "one wrong", "random"};
    RC_TAG(kNames[int(proposer)], counts.accepted > 0 ? "kept some" : "kept none");
    RC_ASSERT(got == expected);
    // The counts say what happened: an oracle's proposals are all kept (until
    // the end), a wrong token never is, and every kept proposal saved a pass.
    if (proposer == Proposer::AllRight) RC_ASSERT(counts.accepted == counts.proposed);
    if (proposer == Proposer::AllWrong) RC_ASSERT(counts.accepted == 0);
    // Each pass emits its kept proposals and one token of its own, except
    // that the last pass's token may be a kept proposal (counted twice here).
    if (!expected.empty()) {
      const long surplus = counts.forward_passes + counts.accepted - long(expected.size());
      RC_ASSERT((surplus == 0 || surplus == 1));
    }
  });
}

TEST_CASE("verify_proposals keeps the drawn prefix and stops at the first difference or at the end", "[reference][speculative]") {
  const std::vector<int> proposals{4, 7, 7, 2};
  const auto run = [&](std::vector<int> draws, int ends_at = -1) {
    std::vector<size_t> rows;
    const Verification v = verify_proposals(proposals, [&](size_t row) {
      rows.push_back(row);
      return Draw{draws.at(row), int(row) == ends_at};
    });
    return std::tuple(v.accepted, v.token, v.ended, rows.size());
  };
  CHECK(run({5, 0, 0, 0, 0}) == std::tuple(0, 5, false, size_t(1)));  // the first draw differs: the target's own token
  CHECK(run({4, 7, 3, 0, 0}) == std::tuple(2, 3, false, size_t(3)));  // two kept, the third replaced
  CHECK(run({4, 7, 7, 2, 9}) == std::tuple(4, 9, false, size_t(5)));  // all kept, and the row after them drawn
  CHECK(run({4, 7, 7, 2, 9}, 1) == std::tuple(1, 7, true, size_t(2)));  // the request ends on a kept proposal
  CHECK(run({4, 8, 7, 2, 9}, 1) == std::tuple(1, 8, true, size_t(2)));  // ... or on a replaced one
  const Verification none = verify_proposals({}, [](size_t) { return Draw{3, false}; });
  CHECK((none.accepted == 0 && none.token == 3 && !none.ended));
}
