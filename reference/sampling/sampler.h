// The sampler: how one row of logits becomes a token, in the order the seed
// document fixes (llama2.c's sample() is the model, in a few functions):
//
//   candidates -> temperature -> top-k -> top-p -> min-p -> softmax -> one inverse-CDF draw
//
// The penalties and logit bias come before all of this, on the float row
// (penalties.h); SamplerState applies them for its request.
//
// Candidates are the tokens still in the running with their logits, held in
// float64: dividing a float logit by a tiny temperature cannot overflow, and
// the softmax sums stay accurate over a 128,000-token vocabulary. Every
// ordering breaks logit ties by the lower token id, so results never depend
// on input order.
//
// Temperature 0 is greedy: the limit of softmax(l / T) as T -> 0 puts all
// mass on the largest logit, so it is keep_top_k(1), whose tie rule is
// llama2.c's argmax (the first maximum). The draw still consumes one uniform,
// so the n-th token of a request always uses the n-th output of its generator
// whatever the temperature.
//
// Parameters are validated once, where they enter (SamplingParams::validate:
// the API, SamplerState, the one-shot sample()); the functions below assert
// their preconditions. Bad logits (NaN, +inf, nothing finite) come from a
// model, not a caller, and are std::invalid_argument wherever they appear.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "reference/sampling/penalties.h"
#include "reference/sampling/rng.h"
#include "reference/sampling/sampling_params.h"

namespace astrai {

// ---- the candidate set ----

struct Candidate {
  int id = 0;  // token id (index into the logits row)
  double logit = 0.0;
};
using Candidates = std::vector<Candidate>;

// One candidate per token whose logit is finite; a -inf logit is a token
// masked out by the caller and never becomes a candidate. Throws
// std::invalid_argument for an empty row, a NaN or +inf logit (naming its
// index), or a row where every logit is -inf.
Candidates candidates_from_logits(std::span<const float> logits);

// "More likely first": logit descending, ties by lower id first. A strict
// total order on distinct ids, so sorting by it is deterministic.
bool more_likely(const Candidate& a, const Candidate& b);

// Softmax of the candidates' logits in their current order, in float64 with
// the maximum subtracted first: p_i = exp(l_i - max) / sum_j exp(l_j - max).
// The sum runs in candidate order. Needs at least one candidate.
std::vector<double> softmax(std::span<const Candidate> candidates);

// ---- the three steps, in the order they apply ----

// l_i <- l_i / T (T finite and > 0): T < 1 sharpens the distribution, T > 1 flattens it.
void apply_temperature(Candidates& candidates, float temperature);

// Keeps the k candidates with the largest logits (k >= 0; 0 keeps all). Ties
// at the k-th value go to the lower id, so exactly min(k, n) remain.
void keep_top_k(Candidates& candidates, int k);

// Nucleus: with p_i the softmax of the candidates sorted more likely first,
// keeps the shortest prefix whose mass reaches p (>= p, compared in float64
// against the float p as given), p in (0, 1]. At least one candidate
// remains; p = 1 keeps everything.
void keep_top_p(Candidates& candidates, float p);

// Keeps the candidates whose probability is at least min_p times the largest
// one's: exp(l_i - max) >= min_p in float64 (that ratio is the probability
// ratio, the largest weight being exp(0) = 1), min_p in [0, 1]; 0 keeps all.
// The most likely candidate always remains. Order is kept.
void keep_min_p(Candidates& candidates, float min_p);

// ---- the draw ----

// Given probabilities p_0..p_{n-1} (n >= 1, >= 0, summing to ~1) and a uniform
// u in [0, 1), returns the first index i with  p_0 + ... + p_i > u * total,
// where total is the same running sum taken to the end, so the result does
// not depend on the probabilities summing to exactly 1. Zero-probability
// entries are never chosen. If rounding leaves no such i (u * total rounded up
// to total), the last entry with p > 0 is chosen. Throws
// std::invalid_argument for an empty input, u outside [0, 1), or no p > 0.
std::size_t inverse_cdf(std::span<const double> probabilities, double u);

// ---- the whole rule ----

// The candidates left after the steps `params` asks for, in ascending id
// order (the order the draw walks). params must be valid.
Candidates kept_candidates(std::span<const float> logits, const SamplingParams& params);
// The final distribution over the whole vocabulary: softmax over the kept
// candidates, 0 for every other token. Same size as logits.
std::vector<double> probabilities(std::span<const float> logits, const SamplingParams& params);
// One token: softmax over the kept candidates in ascending id order, then
// inverse_cdf with the uniform u in [0, 1) (greedy ignores its value).
int sample_with_uniform(std::span<const float> logits, const SamplingParams& params, double u);
// The same after a token mask (token_mask.h): every token the mask does not
// allow gets logit -inf first, so it is never a candidate of top-k, top-p or
// min-p and never drawn. An empty mask masks nothing (no copy of the row).
int sample_with_uniform(std::span<const float> logits, const SamplingParams& params, double u,
                        std::span<const std::uint32_t> mask);
// The same with u = rng.next_uniform(): every token consumes one uniform.
int sample(std::span<const float> logits, const SamplingParams& params, Rng& rng);
// The first token a fresh request with these params would get (validates
// params; seeded with params.seed, or random_seed() when it has none).
int sample(std::span<const float> logits, const SamplingParams& params);

// The steps `params` applies, for logs: "temperature(0.700000) -> top_k(50) -> top_p(0.900000)"
// (penalties, bias and min_p named when set).
std::string describe_sampling(const SamplingParams& params);

// ---- one request's state ----

// The sampling state one generation request owns: its parameters, its own
// generator and its token counts (for the penalties). Because nothing is
// shared, a seeded request gives the same tokens whatever other requests run
// beside it and in whatever order the scheduler serves them.
class SamplerState {
 public:
  // Validates params (std::invalid_argument). The generator is seeded with
  // params.seed, or with random_seed() drawn once here when it has none.
  // The prompt counts for the repetition penalty.
  explicit SamplerState(const SamplingParams& params, std::span<const int> prompt = {});

  // The request's next token from one row of the model's logits: the
  // penalties and bias on a copy of the row, then sample_with_uniform. The
  // token is recorded (record()).
  int next(std::span<const float> logits);
  // The uniform for the request's next token alone, for a sampler that runs
  // elsewhere (on the GPU): applying adjustments() to the row, then
  // sample_with_uniform(row, params(), u), gives what next(logits) would have
  // given here; the caller then record()s the token.
  double next_uniform() { return rng_.next_uniform(); }
  // The logit changes for the next token (penalties.h): O(tokens seen), empty
  // when the request has no penalty and no bias.
  // Kept up to date by record(), so reading it costs nothing per step.
  std::span<const LogitAdjustment> adjustments() const { return adjustments_.adjustments(); }
  // A generated token, for the penalties of the tokens after it (O(1)).
  void record(int token) {
    if (params_.adjusts_logits()) adjustments_.add_generated(token);
  }

  // The seed in use (the drawn one for an unseeded request), so that any
  // request can be replayed exactly.
  std::uint64_t seed() const { return seed_; }
  const SamplingParams& params() const { return params_; }

 private:
  SamplingParams params_;
  std::uint64_t seed_;
  Rng rng_;
  AdjustmentList adjustments_;  // empty without penalties and bias
};

}  // namespace astrai
