// The scale searches of llama.cpp's K-quant encoders: for a group of weights,
// the scale (and minimum) whose integer grid fits them best by weighted
// squared error, trying a few grids around the obvious one. Float32
// arithmetic in llama.cpp's order, so the chosen integers are its own.
#pragma once

#include <cstdint>
#include <span>

namespace astrai::quant {

// Round to nearest, ties to even, as llama.cpp's nearest_int (|x| < 2^22).
int nearest_int(float x);

// Symmetric grid: x ~ scale * (L - nmax) with L in [0, 2 nmax). Weights are
// x^2 (llama.cpp's rmse_type 1). Writes L; returns scale (0 for a group of
// (near) zeros).
float fit_symmetric(std::span<const float> x, int nmax, std::span<uint8_t> L);

// Grid with a minimum: x ~ scale * L - min with L in [0, nmax], min >= 0.
// `weights` weigh the squared errors; the search tries nstep + 1 grids of
// (rmin + rdelta * step + nmax) levels over the group's range. Writes L and
// *min; returns scale.
float fit_scale_min(std::span<const float> x, std::span<const float> weights, int nmax, float rmin, float rdelta,
                    int nstep, std::span<uint8_t> L, float* min);

}  // namespace astrai::quant
