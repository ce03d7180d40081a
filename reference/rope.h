// Rotary position embedding (RoPE, Su et al. 2021), with Llama 3.1's
// frequency scaling.
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
std::vector<float> rope_frequencies(int head_dim, float theta, const RopeScaling& scaling = {});
inline std::vector<float> rope_frequencies(const ModelConfig& c) {
  return rope_frequencies(c.head_dim(), c.rope_theta, c.rope_scaling);
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
// on the positions only through their difference.
void apply_rope(xt::xtensor<float, 2>& x, std::span<const int> positions, std::span<const float> frequencies,
                RopeLayout layout);

}  // namespace astrai
