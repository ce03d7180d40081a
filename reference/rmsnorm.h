// RMSNorm (Zhang & Sennrich, 2019), applied to each row independently.
#pragma once

#include <xtensor/xtensor.hpp>

namespace astrai {

// y = x / sqrt(mean(x^2) + eps) * weight, for every row of x: [rows, dim].
xt::xtensor<float, 2> rmsnorm(const xt::xtensor<float, 2>& x, const xt::xtensor<float, 1>& weight, float eps);

}  // namespace astrai
