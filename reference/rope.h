// Rotary position embedding (RoPE, Su et al. 2021).
#pragma once

#include <cmath>
#include <span>

#include <xtensor/xtensor.hpp>

#include "reference/model_config.h"

namespace astrai {

// Rotates each pair (a, b) of every head of x: [rows, n_heads * head_dim] in
// place, row r by the angle pos[r] * theta^(-2i / head_dim) of its pair index i:
//   a' = a cos(angle) - b sin(angle)
//   b' = a sin(angle) + b cos(angle)
// The pairs are (x[2i], x[2i+1]) for AdjacentPairs and (x[i], x[i + head_dim/2])
// for RotateHalf. Rotations preserve each pair's norm, and q.k after RoPE depends
// on the positions only through their difference.
// The angle of pair i at position pos: pos * theta^(-2i / head_dim), computed
// in float as llama2.c does (1 / theta^(2i / head_dim), then times pos), so
// angles match it bit for bit. The one definition: the CUDA executor's angle
// tables use it too.
inline float rope_angle(int pos, int i, int head_dim, float theta) {
  const float freq = 1.0f / std::pow(theta, float(2 * i) / float(head_dim));
  return float(pos) * freq;
}

void apply_rope(xt::xtensor<float, 2>& x, std::span<const int> positions, int head_dim, float theta,
                RopeLayout layout);

}  // namespace astrai
