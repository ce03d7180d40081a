// The GeGLU feed-forward block of Gemma (Shazeer, 2020): SwiGLU's gated
// product with tanh-approximated GELU in place of SiLU.
#pragma once

#include <xtensor/xtensor.hpp>

#include "reference/model_weights.h"

namespace astrai {

// gelu_tanh(z) = 0.5 z (1 + tanh(sqrt(2 / pi) (z + 0.044715 z^3))), elementwise,
// in float (PyTorch's gelu(approximate="tanh"), transformers' gelu_pytorch_tanh).
xt::xtensor<float, 2> gelu_tanh(const xt::xtensor<float, 2>& z);

// FFN(x) = W_down ( gelu_tanh(x W_gate^T) * (x W_up^T) )^T with a dense
// layer's w_gate, w_up, w_down, for x: [rows, dim].
xt::xtensor<float, 2> geglu_ffn(const xt::xtensor<float, 2>& x, const LayerWeights& layer);

}  // namespace astrai
