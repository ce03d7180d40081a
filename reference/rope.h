// Rotary position embedding (RoPE, Su et al. 2021), with the frequency
// scalings of Llama 3.1, Gemma 3 (linear) and gpt-oss (YaRN), and per-layer
// bases (Gemma 3's sliding layers).
#pragma once

#include <cmath>
#include <span>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "reference/model_config.h"

namespace astrai {

// The rotation frequency (radians per position) of every pair i = 0 ..
// head_dim/2 - 1 of a head: the one definition both backends use (the CUDA
// executor's cos/sin tables are built from it).
//
//   f_i = 1 / theta^(2i / head_dim), in float as llama2.c computes it (and as
//         transformers' _compute_default_rope_parameters does, in float32).
//   With scaling on (config.json rope_scaling rope_type "llama3", transformers'
//   _compute_llama3_parameters), with wavelen = 2 pi / f_i and
//   L = original_context:
//     wavelen < L / high_freq_factor   f_i                     (high frequencies kept)
//     wavelen > L / low_freq_factor    f_i / factor            (low frequencies slowed)
//     otherwise                        (1 - s) f_i / factor + s f_i,
//                                      s = (L / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
//   The three bands are evaluated in float64 from the float f_i and rounded
//   once to float (transformers evaluates them in float32: the two agree to
//   an ulp or so).
//   Linear (rope_type "linear"): f_i / factor.
//   YaRN (rope_type "yarn", transformers' _compute_yarn_parameters), with
//   d = head_dim, L = original_context and the pair index that turns r times
//   in L positions, c(r) = d ln(L / (2 pi r)) / (2 ln theta):
//     low = max(c(beta_fast), 0), high = min(c(beta_slow), d - 1), rounded
//     outwards (floor, ceil) only when `truncate` (llama.cpp always rounds:
//     for gpt-oss, which sets truncate false, we follow transformers);
//     ramp_i = clamp((i - low) / (high - low), 0, 1)   (high += 0.001 when equal)
//     f_i' = (f_i / factor) ramp_i + f_i (1 - ramp_i)
//   so the fast pairs (small i) keep their frequency and the slow ones are
//   interpolated; again float64 from the float f_i, rounded once.
std::vector<float> rope_frequencies(int head_dim, float theta, const RopeScaling& scaling = {});

// What cos and sin are multiplied by (transformers' attention_scaling):
// YaRN's attention_factor, by default 0.1 ln(factor) + 1 (1 for factor <= 1);
// 1 for every other kind. Both q and k are scaled, so scores grow by its square.
float rope_attention_factor(const RopeScaling& scaling);

// The base and scaling layer `layer` rotates with: Gemma 3's sliding layers
// use sliding_rope_theta unscaled; every other layer rope_theta and rope_scaling.
struct LayerRope {
  float theta;
  RopeScaling scaling;
  bool operator==(const LayerRope&) const = default;
};
LayerRope layer_rope(const ModelConfig& c, int layer);
inline std::vector<float> rope_frequencies(const ModelConfig& c, int layer = 0) {
  const LayerRope r = layer_rope(c, layer);
  return rope_frequencies(c.head_dim(), r.theta, r.scaling);
}

// The angle of a pair of frequency f at position pos: float(pos) * f in float,
// as llama2.c computes it, so unscaled angles match it bit for bit.
inline float rope_angle(int pos, float frequency) { return float(pos) * frequency; }

// Rotates each pair (a, b) of every head of x: [rows, n_heads * head_dim] in
// place, with head_dim = 2 * frequencies.size(), row r by the angle
// rope_angle(pos[r], frequencies[i]) of its pair index i:
//   a' = a cos(angle) - b sin(angle)
//   b' = a sin(angle) + b cos(angle)
// The pairs are (x[2i], x[2i+1]) for AdjacentPairs and (x[i], x[i + head_dim/2])
// for RotateHalf. Rotations preserve each pair's norm, and q.k after RoPE depends
// on the positions only through their difference. With `magnitude` m
// (rope_attention_factor()) the rotation uses m cos and m sin, each rounded to
// float before the products, as transformers' cos * attention_scaling is;
// m = 1 changes no bit.
void apply_rope(xt::xtensor<float, 2>& x, std::span<const int> positions, std::span<const float> frequencies,
                RopeLayout layout, float magnitude = 1.0f);

}  // namespace astrai
