// The SwiGLU feed-forward block (Shazeer, 2020).
#pragma once

#include <xtensor/xtensor.hpp>

#include "reference/model_weights.h"

namespace astrai {

// silu(z) = z * sigmoid(z) = z / (1 + exp(-z)), elementwise.
xt::xtensor<float, 2> silu(const xt::xtensor<float, 2>& z);

// FFN(x) = W_down ( silu(x W_gate^T) * (x W_up^T) )^T, for x: [rows, dim].
xt::xtensor<float, 2> swiglu(const xt::xtensor<float, 2>& x, const xt::xtensor<float, 2>& w_gate,
                             const xt::xtensor<float, 2>& w_up, const xt::xtensor<float, 2>& w_down);

// A dense layer's feed-forward block: swiglu with its w_gate, w_up, w_down.
xt::xtensor<float, 2> swiglu_ffn(const xt::xtensor<float, 2>& x, const LayerWeights& layer);

}  // namespace astrai
