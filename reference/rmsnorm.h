// RMSNorm (Zhang & Sennrich, 2019), applied to each row independently.
#pragma once

#include <xtensor/xtensor.hpp>

namespace astrai {

// y = x / sqrt(mean(x^2) + eps) * weight, for every row of x: [rows, dim].
xt::xtensor<float, 2> rmsnorm(const xt::xtensor<float, 2>& x, const xt::xtensor<float, 1>& weight, float eps);

// rmsnorm() of every head of every row on its own: x is [rows, n_heads *
// head_dim] with head_dim = weight.size(), each head_dim-wide slice normalized
// by its own mean square and scaled by the one shared weight (Qwen 3's q_norm
// and k_norm, transformers' Qwen3RMSNorm over the last axis of q viewed as
// [rows, n_heads, head_dim]).
xt::xtensor<float, 2> rmsnorm_heads(const xt::xtensor<float, 2>& x, const xt::xtensor<float, 1>& weight, float eps);

}  // namespace astrai
