// An independent float64 statement of RoPE's frequencies, for the reference
// tests: theta^(-2i/head_dim) in float64, then Llama 3.1's three bands
// (transformers' _compute_llama3_parameters) written plainly from the
// formula. It shares no code with reference/rope.cpp.
#pragma once

#include <cmath>
#include <numbers>

#include "reference/model_config.h"

namespace astrai::test {

// Which of Llama 3.1's bands pair i falls in (Unscaled when scaling is off).
enum class RopeBand { Unscaled, High, Medium, Low };

inline double rope_frequency_f64(int i, int head_dim, double theta, const RopeScaling& s, RopeBand* band = nullptr) {
  const double f = std::pow(theta, -2.0 * double(i) / double(head_dim));
  if (band) *band = RopeBand::Unscaled;
  if (!(s.factor > 0.0f)) return f;
  const double wavelen = 2.0 * std::numbers::pi / f;
  const double L = s.original_context, low = s.low_freq_factor, high = s.high_freq_factor;
  if (wavelen < L / high) {
    if (band) *band = RopeBand::High;
    return f;
  }
  if (wavelen > L / low) {
    if (band) *band = RopeBand::Low;
    return f / s.factor;
  }
  if (band) *band = RopeBand::Medium;
  const double smooth = (L / wavelen - low) / (high - low);
  return (1.0 - smooth) * f / s.factor + smooth * f;
}

}  // namespace astrai::test
