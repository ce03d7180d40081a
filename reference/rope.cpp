#include "reference/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

namespace astrai {

namespace {

// Linear: every pair `factor` times slower.
void scale_linear(std::vector<float>& f, const RopeScaling& s) {
  for (float& freq : f) freq = float(double(freq) / s.factor);
}

// YaRN (see rope.h): pair i's frequency blends from kept (ramp 0) to
// interpolated (ramp 1) between the pairs that turn beta_fast and beta_slow
// times in the original context.
void scale_yarn(std::vector<float>& f, int head_dim, float theta, const RopeScaling& s) {
  const double d = head_dim, L = s.original_context;
  auto pair_turning = [&](double turns) {  // the pair index that turns `turns` times in L positions
    return d * std::log(L / (turns * 2.0 * std::numbers::pi)) / (2.0 * std::log(double(theta)));
  };
  double low = pair_turning(s.beta_fast), high = pair_turning(s.beta_slow);
  if (s.truncate) low = std::floor(low), high = std::ceil(high);
  low = std::max(low, 0.0), high = std::min(high, d - 1.0);
  if (low == high) high += 0.001;
  for (size_t i = 0; i < f.size(); ++i) {
    const double ramp = std::clamp((double(i) - low) / (high - low), 0.0, 1.0);
    const double base = f[i];
    f[i] = float(base / s.factor * ramp + base * (1.0 - ramp));
  }
}

}  // namespace

float rope_attention_factor(const RopeScaling& s) {
  if (!s.enabled() || s.kind != RopeScalingKind::Yarn) return 1.0f;
  if (s.attention_factor > 0.0f) return s.attention_factor;
  return s.factor <= 1.0f ? 1.0f : float(0.1 * std::log(double(s.factor)) + 1.0);
}

LayerRope layer_rope(const ModelConfig& c, int layer) {
  if (c.sliding_rope_theta > 0.0f && c.sliding(layer)) return {c.sliding_rope_theta, RopeScaling{}};
  return {c.rope_theta, c.rope_scaling};
}

std::vector<float> rope_frequencies(int head_dim, float theta, const RopeScaling& scaling) {
  if (head_dim <= 0 || head_dim % 2 != 0) throw std::invalid_argument("rope_frequencies: head_dim must be even");
  std::vector<float> f(size_t(head_dim / 2));
  for (int i = 0; i < head_dim / 2; ++i) f[size_t(i)] = 1.0f / std::pow(theta, float(2 * i) / float(head_dim));
  if (!scaling.enabled()) return f;
  if (scaling.kind == RopeScalingKind::Linear) {
    scale_linear(f, scaling);
    return f;
  }
  if (scaling.kind == RopeScalingKind::Yarn) {
    scale_yarn(f, head_dim, theta, scaling);
    return f;
  }
  const double L = scaling.original_context, low = scaling.low_freq_factor, high = scaling.high_freq_factor,
               factor = scaling.factor;
  for (float& freq : f) {
    const double base = freq, wavelen = 2.0 * std::numbers::pi / base;
    if (wavelen < L / high) continue;  // high frequency: kept
    if (wavelen > L / low) {
      freq = float(base / factor);  // low frequency: `factor` times slower
    } else {
      const double s = (L / wavelen - low) / (high - low);  // 0 at L / low, 1 at L / high
      freq = float((1.0 - s) * base / factor + s * base);
    }
  }
  return f;
}

void apply_rope(xt::xtensor<float, 2>& x, std::span<const int> positions, std::span<const float> frequencies,
                RopeLayout layout, float magnitude) {
  const size_t rows = x.shape(0), width = x.shape(1), half = frequencies.size(), hd = 2 * half;
  if (positions.size() != rows) throw std::invalid_argument("apply_rope: one position per row is needed");
  if (hd == 0 || width % hd != 0)
    throw std::invalid_argument("apply_rope: row width must be a multiple of head_dim (2 * frequencies)");
  for (size_t r = 0; r < rows; ++r) {
    for (size_t head = 0; head < width / hd; ++head) {
      float* h = &x(r, head * hd);
      for (size_t i = 0; i < half; ++i) {
        const float angle = rope_angle(positions[r], frequencies[i]);
        const float c = std::cos(angle) * magnitude, s = std::sin(angle) * magnitude;
        float& a = layout == RopeLayout::AdjacentPairs ? h[2 * i] : h[i];
        float& b = layout == RopeLayout::AdjacentPairs ? h[2 * i + 1] : h[i + half];
        const float a0 = a, b0 = b;
        a = a0 * c - b0 * s;
        b = a0 * s + b0 * c;
      }
    }
  }
}

}  // namespace astrai
