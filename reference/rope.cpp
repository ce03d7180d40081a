#include "reference/rope.h"

#include <cmath>
#include <numbers>
#include <stdexcept>

namespace astrai {

std::vector<float> rope_frequencies(int head_dim, float theta, const RopeScaling& scaling) {
  if (head_dim <= 0 || head_dim % 2 != 0) throw std::invalid_argument("rope_frequencies: head_dim must be even");
  std::vector<float> f(size_t(head_dim / 2));
  for (int i = 0; i < head_dim / 2; ++i) f[size_t(i)] = 1.0f / std::pow(theta, float(2 * i) / float(head_dim));
  if (!scaling.enabled()) return f;
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
                RopeLayout layout) {
  const size_t rows = x.shape(0), width = x.shape(1), half = frequencies.size(), hd = 2 * half;
  if (positions.size() != rows) throw std::invalid_argument("apply_rope: one position per row is needed");
  if (hd == 0 || width % hd != 0)
    throw std::invalid_argument("apply_rope: row width must be a multiple of head_dim (2 * frequencies)");
  for (size_t r = 0; r < rows; ++r) {
    for (size_t head = 0; head < width / hd; ++head) {
      float* h = &x(r, head * hd);
      for (size_t i = 0; i < half; ++i) {
        const float angle = rope_angle(positions[r], frequencies[i]);
        const float c = std::cos(angle), s = std::sin(angle);
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
