#include "reference/rmsnorm.h"

#include <cmath>
#include <stdexcept>
#include <string>

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

namespace astrai {

xt::xtensor<float, 2> rmsnorm_heads(const xt::xtensor<float, 2>& x, const xt::xtensor<float, 1>& weight, float eps) {
  const size_t rows = x.shape(0), width = x.shape(1), hd = weight.size();
  if (hd == 0 || width % hd != 0)
    throw std::invalid_argument("rmsnorm_heads: row width " + std::to_string(width) +
                                " is not a multiple of the head width " + std::to_string(hd));
  // Row-major: the [rows, n_heads * hd] data read as [rows * n_heads, hd] is one head per row.
  xt::xtensor<float, 2> heads = x;
  heads.reshape({rows * (width / hd), hd});
  xt::xtensor<float, 2> y = rmsnorm(heads, weight, eps);
  y.reshape({rows, width});
  return y;
}

}  // namespace astrai
