#include "reference/swiglu.h"

#include <algorithm>
#include <cmath>

#include "reference/linear.h"

namespace astrai {

xt::xtensor<float, 2> silu(const xt::xtensor<float, 2>& z) {
  xt::xtensor<float, 2> y(z.shape());
  auto in = z.begin();
  for (auto out = y.begin(); out != y.end(); ++out, ++in) *out = *in * (1.0f / (1.0f + std::exp(-*in)));
  return y;
}

xt::xtensor<float, 2> clamped_swiglu(const xt::xtensor<float, 2>& gate, const xt::xtensor<float, 2>& up, float limit) {
  xt::xtensor<float, 2> y(gate.shape());
  for (size_t i = 0; i < y.size(); ++i) {
    const float g = std::min(gate.data()[i], limit);
    const float u = std::clamp(up.data()[i], -limit, limit);
    y.data()[i] = (u + 1.0f) * (g * (1.0f / (1.0f + std::exp(-kClampedSwigluAlpha * g))));
  }
  return y;
}

xt::xtensor<float, 2> swiglu(const xt::xtensor<float, 2>& x, const xt::xtensor<float, 2>& w_gate,
                             const xt::xtensor<float, 2>& w_up, const xt::xtensor<float, 2>& w_down) {
  xt::xtensor<float, 2> gate = silu(linear(x, w_gate));
  xt::xtensor<float, 2> up = linear(x, w_up);
  xt::xtensor<float, 2> hidden = gate * up;
  return linear(hidden, w_down);
}

xt::xtensor<float, 2> swiglu_ffn(const xt::xtensor<float, 2>& x, const LayerWeights& layer) {
  return swiglu(x, layer.w_gate, layer.w_up, layer.w_down);
}

}  // namespace astrai
