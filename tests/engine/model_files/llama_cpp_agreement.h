// Does llama.cpp run a GGUF file as AstrAI's reference runs the same file?
// llama.cpp (llama_cpp_oracle.h: node-llama-cpp) generates greedily after each
// prompt; the reference (reference/generate.h) generates on the weights
// AstrAI reads from the file. Two checks, with the tolerances derived below:
//  - the greedy tokens agree over the reference's decided steps
//    (greedy_margins.h);
//  - at every step of llama.cpp's own trajectory (the reference fed
//    llama.cpp's tokens), llama.cpp's distribution is close to the
//    reference's logits: this one sees a model that differs only a little
//    (a RoPE table, a bias) even where the random synthetic models decide few
//    steps.
// Mixture-of-Experts models: both checks stop at the first step whose
// logits depend on an expert choice nearer a tie than llama.cpp's rounding
// (routed_steps).
// Used by test_llama_cpp_files.cpp (files llama.cpp quantized) and
// test_llama_cpp_architectures.cpp (every architecture and option AstrAI writes).
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <span>
#include <vector>

#include "engine/model_files/load_model.h"
#include "reference/dense_kv_cache.h"
#include "reference/forward.h"
#include "reference/generate.h"
#include "tests/engine/model_files/llama_cpp_oracle.h"
#include "tests/support/greedy_margins.h"
#include "tests/support/routing_margins.h"

namespace astrai::test {

// llama.cpp rounds activations to 8 bits per block of 32 (Q8_0/Q8_K) inside
// its quantized dot products, to float16 for F16 weights and to bfloat16
// (8 significant bits) for BF16 weights: relative errors of up to 1/254 of a
// block's largest value per element. Within 2e-2 of (|logit| + mean|row|)
// covers that through these shallow models; where the top two of the
// reference's logits are closer than that, either token is right and the
// comparison stops there (greedy_margins.h). Measured: at 4e-3 llama.cpp
// picks another token on the synthetic model's Q4_K_M and Q4_0 files, so the
// error is real and of this order.
inline constexpr double kActivationRtol = 2e-2;

// llama.cpp's distribution at a step may differ from the reference's logits
// on the same file by this fraction of the row's spread
// (distribution_distance): the activation rounding above. Measured (every
// step of every prompt): at most 0.016 on the 14 files of
// test_llama_cpp_files, 0.022 on test_llama_cpp_architectures' Q4_K file and
// 0.013 or less on its others, so 0.03 leaves room for another CPU's
// llama.cpp kernels; a decoder that
// misreads a block moves the logits by the size of the weight error itself
// (0.03 to 0.4 normwise), a missing RoPE table or bias by more (the planted
// bugs of docs/testing.md).
inline constexpr double kDistributionTolerance = 0.03;

// How far llama.cpp's log-probabilities are from the reference's logits, both
// centred (a log-probability is the logit minus a constant per row): the
// largest difference over the tokens llama.cpp gives a nonzero probability,
// relative to the spread (max - min) of llama.cpp's row. NaN in either row
// gives NaN, which fails every `<=`.
inline double distribution_distance(const std::vector<float>& logits, const std::vector<double>& logp) {
  double mean_a = 0, mean_b = 0, lo = INFINITY, hi = -INFINITY;
  size_t n = 0;
  for (size_t t = 0; t < logp.size(); ++t) {
    if (!std::isfinite(logp[t])) continue;
    mean_a += logits[t], mean_b += logp[t], ++n;
    lo = std::min(lo, logp[t]), hi = std::max(hi, logp[t]);
  }
  mean_a /= double(n), mean_b /= double(n);
  double worst = 0;
  for (size_t t = 0; t < logp.size(); ++t)
    if (std::isfinite(logp[t])) {
      const double d = std::fabs((logits[t] - mean_a) - (logp[t] - mean_b));
      worst = std::isnan(d) || std::isnan(worst) ? NAN : std::max(worst, d);
    }
  return worst / (hi - lo);
}

// The reference's logits at each step when fed `tokens` after the prompt
// (the logits before each of them).
inline std::vector<std::vector<float>> forced_logits(const ModelWeights& w, const std::vector<int>& prompt,
                                                     const std::vector<int>& tokens) {
  std::vector<std::vector<float>> rows;
  GenerateOptions o;
  o.max_new_tokens = int(tokens.size());
  generate(w, prompt, o, [&](std::span<const float> row) {
    rows.emplace_back(row.begin(), row.end());
    return tokens[rows.size() - 1];
  });
  return rows;
}

struct Agreement {
  size_t decided = 0;              // greedy steps compared, all prompts
  size_t steps = 0;                // distributions compared, all prompts
  double worst_distribution = 0;   // largest distribution_distance
};

// llama.cpp's run of the GGUF at `path` against the reference's run of
// `model` (what AstrAI read from that file), n_tokens after each prompt.
// `routing_rtol`: the relative error of llama.cpp's router scores
// (routed_steps) and of its logits (decided_steps); kActivationRtol where it
// rounds activations (16-bit and quantized weights), far less for F32 files,
// whose products it computes in float32 (1e-4: sums of a few hundred float32
// products, ~1e-6 relative).
inline Agreement check_llama_cpp_agrees(const std::filesystem::path& path, const LoadedModel& model,
                                        const std::vector<std::vector<int>>& prompts, int n_tokens,
                                        double routing_rtol = kActivationRtol) {
  const auto theirs = llama_cpp_greedy(path, prompts, n_tokens);
  Agreement a;
  for (size_t i = 0; i < prompts.size(); ++i) {
    std::vector<GreedyStep> steps;
    GenerateOptions o;
    o.max_new_tokens = n_tokens;
    o.stop_tokens = model.tokenizer.end_of_generation_ids();
    generate(model.weights, prompts[i], o, recording_argmax(steps));
    const size_t decided = std::min(decided_steps(steps, routing_rtol),
                                    routed_steps(model.weights, prompts[i], tokens_of(steps), routing_rtol));
    a.decided += decided;
    INFO("prompt " << i << ": " << decided << " of " << steps.size() << " steps decided");
    CHECK(first(theirs[i].tokens, decided) == first(tokens_of(steps), decided));

    const auto rows = forced_logits(model.weights, prompts[i], theirs[i].tokens);
    REQUIRE(rows.size() == theirs[i].logp.size());
    const size_t routed = routed_steps(model.weights, prompts[i], theirs[i].tokens, routing_rtol);
    for (size_t s = 0; s < std::min(rows.size(), routed); ++s) {
      const double d = distribution_distance(rows[s], theirs[i].logp[s]);
      INFO("step " << s);
      CHECK(d <= kDistributionTolerance);
      a.worst_distribution = std::isnan(d) ? d : std::max(a.worst_distribution, d);
      ++a.steps;
    }
  }
  return a;
}

// The reference's logits after the whole prompt (the row that chooses the first new token).
inline std::vector<float> prompt_logits(const ModelWeights& w, const std::vector<int>& prompt) {
  std::vector<float> logits;
  GenerateOptions o;
  o.max_new_tokens = 1;
  generate(w, prompt, o, [&](std::span<const float> row) {
    logits.assign(row.begin(), row.end());
    return 0;
  });
  return logits;
}

// ||got - want|| / ||want||; NaN when either holds NaN.
inline double normwise_difference(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += double(want[i]) * want[i];
  }
  return std::sqrt(num / den);
}

}  // namespace astrai::test
