// The SwiGLU feed-forward block (Shazeer, 2020).
#pragma once

#include <xtensor/xtensor.hpp>

#include "reference/model_weights.h"

namespace astrai {

// silu(z) = z * sigmoid(z) = z / (1 + exp(-z)), elementwise.
xt::xtensor<float, 2> silu(const xt::xtensor<float, 2>& z);

// gpt-oss's clamped SwiGLU activation of a gate and an up projection
// (transformers' GptOssExperts; llama.cpp's swiglu_oai), elementwise:
//   g = min(gate, limit), u = clamp(up, -limit, limit),
//   out = (u + 1) * g * sigmoid(alpha g),  alpha = kClampedSwigluAlpha.
// The gate is clamped only from above, so a very negative gate still gives
// ~0; the "+ 1" lets the up projection pass its own value through.
inline constexpr float kClampedSwigluAlpha = 1.702f;  // both implementations' constant
xt::xtensor<float, 2> clamped_swiglu(const xt::xtensor<float, 2>& gate, const xt::xtensor<float, 2>& up, float limit);

// FFN(x) = W_down ( silu(x W_gate^T) * (x W_up^T) )^T, for x: [rows, dim].
xt::xtensor<float, 2> swiglu(const xt::xtensor<float, 2>& x, const xt::xtensor<float, 2>& w_gate,
                             const xt::xtensor<float, 2>& w_up, const xt::xtensor<float, 2>& w_down);

// A dense layer's feed-forward block: swiglu with its w_gate, w_up, w_down.
xt::xtensor<float, 2> swiglu_ffn(const xt::xtensor<float, 2>& x, const LayerWeights& layer);

}  // namespace astrai
