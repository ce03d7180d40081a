#include "reference/rope.h"

#include <cmath>
#include <stdexcept>

namespace astrai {

void apply_rope(xt::xtensor<float, 2>& x, std::span<const int> positions, int head_dim, float theta,
                RopeLayout layout) {
  const size_t rows = x.shape(0), width = x.shape(1), hd = size_t(head_dim), half = hd / 2;
  if (positions.size() != rows) throw std::invalid_argument("apply_rope: one position per row is needed");
  if (hd == 0 || hd % 2 != 0 || width % hd != 0)
    throw std::invalid_argument("apply_rope: row width must be a multiple of an even head_dim");
  for (size_t r = 0; r < rows; ++r) {
    for (size_t head = 0; head < width / hd; ++head) {
      float* h = &x(r, head * hd);
      for (size_t i = 0; i < half; ++i) {
        const float angle = rope_angle(positions[r], int(i), head_dim, theta);
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
