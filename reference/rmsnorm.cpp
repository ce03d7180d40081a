#include "reference/rmsnorm.h"

#include <cmath>

#include <xtensor/xview.hpp>

namespace astrai {

xt::xtensor<float, 2> rmsnorm(const xt::xtensor<float, 2>& x, const xt::xtensor<float, 1>& weight, float eps) {
  const size_t rows = x.shape(0), dim = x.shape(1);
  xt::xtensor<float, 2> y(x.shape());
  for (size_t r = 0; r < rows; ++r) {
    // Sum of squares in row order, in float, as llama2.c accumulates it.
    float sum_sq = 0.0f;
    for (size_t i = 0; i < dim; ++i) sum_sq += x(r, i) * x(r, i);
    const float inv_rms = 1.0f / std::sqrt(sum_sq / float(dim) + eps);
    for (size_t i = 0; i < dim; ++i) y(r, i) = weight(i) * (inv_rms * x(r, i));
  }
  return y;
}

}  // namespace astrai
