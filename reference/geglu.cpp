#include "reference/geglu.h"

#include <cmath>
#include <numbers>

#include "reference/linear.h"

namespace astrai {

xt::xtensor<float, 2> gelu_tanh(const xt::xtensor<float, 2>& z) {
  const float k = float(std::sqrt(2.0 / std::numbers::pi));  // sqrt(2 / pi), rounded once
  xt::xtensor<float, 2> y(z.shape());
  auto in = z.begin();
  for (auto out = y.begin(); out != y.end(); ++out, ++in) {
    const float x = *in;
    *out = 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
  }
  return y;
}

xt::xtensor<float, 2> geglu_ffn(const xt::xtensor<float, 2>& x, const LayerWeights& layer) {
  const xt::xtensor<float, 2> gate = gelu_tanh(linear(x, layer.w_gate));
  const xt::xtensor<float, 2> up = linear(x, layer.w_up);
  return linear(xt::xtensor<float, 2>(gate * up), layer.w_down);
}

}  // namespace astrai
