// An independent float64 statement of RoPE's frequencies, for the reference
// tests: theta^(-2i/head_dim) in float64, then Llama 3.1's three bands
// (transformers' _compute_llama3_parameters), linear scaling, and YaRN
// (transformers' _compute_yarn_parameters: the ramp over pair indices
// between the pairs that turn beta_fast and beta_slow times in the original
// context) written plainly from the formulas. It shares no code with
// reference/rope.cpp.
#pragma once

#include <cmath>
#include <numbers>

#include "reference/model_config.h"

namespace astrai::test {

// Which of Llama 3.1's bands pair i falls in (Unscaled when scaling is off).
enum class RopeBand { Unscaled, High, Medium, Low };

// YaRN's ramp at pair i: 0 (kept) .. 1 (interpolated).
inline double yarn_ramp_f64(int i, int head_dim, double theta, const RopeScaling& s) {
  // Pair j turns L theta^(-2j/d) / (2 pi) times in L positions; solved for j.
  const auto pair_turning = [&](double turns) {
    return double(head_dim) * std::log(double(s.original_context) / (turns * 2.0 * std::numbers::pi)) /
           (2.0 * std::log(theta));
  };
  double lo = pair_turning(s.beta_fast), hi = pair_turning(s.beta_slow);
  if (s.truncate) {
    lo = std::floor(lo);
    hi = std::ceil(hi);
  }
  if (lo < 0.0) lo = 0.0;
  if (hi > double(head_dim - 1)) hi = double(head_dim - 1);
  if (hi == lo) hi += 0.001;
  const double t = (double(i) - lo) / (hi - lo);
  return t < 0.0 ? 0.0 : t > 1.0 ? 1.0 : t;
}

// The factor YaRN multiplies cos and sin by (1 for the other kinds).
inline double rope_magnitude_f64(const RopeScaling& s) {
  if (!(s.factor > 0.0f) || s.kind != RopeScalingKind::Yarn) return 1.0;
  if (s.attention_factor > 0.0f) return s.attention_factor;
  return s.factor <= 1.0f ? 1.0 : 0.1 * std::log(double(s.factor)) + 1.0;
}

inline double rope_frequency_f64(int i, int head_dim, double theta, const RopeScaling& s, RopeBand* band = nullptr) {
  const double f = std::pow(theta, -2.0 * double(i) / double(head_dim));
  if (band) *band = RopeBand::Unscaled;
  if (!(s.factor > 0.0f)) return f;
  if (s.kind == RopeScalingKind::Linear) return f / s.factor;
  if (s.kind == RopeScalingKind::Yarn) {
    const double ramp = yarn_ramp_f64(i, head_dim, theta, s);
    return f * (1.0 - ramp) + f / s.factor * ramp;
  }
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
