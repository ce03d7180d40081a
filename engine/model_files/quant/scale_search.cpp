// llama.cpp's K-quant scale searches (see scale_search.h).
#include "engine/model_files/quant/scale_search.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace astrai::quant {
namespace {

// Below this largest magnitude a group is all zeros (llama.cpp's GROUP_MAX_EPS).
constexpr float kGroupMaxEps = 1e-15f;

}  // namespace

int nearest_int(float x) { return int(std::nearbyint(x)); }

float fit_symmetric(std::span<const float> x, int nmax, std::span<uint8_t> L) {
  const size_t n = x.size();
  float max = 0, amax = 0;  // the value of largest magnitude, and its magnitude
  for (size_t i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) amax = ax, max = x[i];
  }
  if (amax < kGroupMaxEps) {
    std::fill(L.begin(), L.end(), uint8_t(0));
    return 0;
  }
  // sum w x l and sum w l^2 over the grid of `iscale`, w = x^2.
  auto sums = [&](float iscale, float& sumlx, float& suml2) {
    sumlx = suml2 = 0;
    for (size_t i = 0; i < n; ++i) {
      const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
      const float w = x[i] * x[i];
      sumlx += w * x[i] * float(l);
      suml2 += w * float(l) * float(l);
    }
  };
  auto assign = [&](float iscale) {
    for (size_t i = 0; i < n; ++i) L[i] = uint8_t(nmax + std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1));
  };
  float sumlx, suml2;
  float iscale = float(-nmax) / max;
  sums(iscale, sumlx, suml2);
  assign(iscale);
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int step = -9; step <= 9; ++step) {
    if (step == 0) continue;
    iscale = -(float(nmax) + 0.1f * float(step)) / max;
    sums(iscale, sumlx, suml2);
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      assign(iscale);
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

float fit_scale_min(std::span<const float> x, std::span<const float> weights, int nmax, float rmin, float rdelta,
                    int nstep, std::span<uint8_t> L, float* the_min) {
  const size_t n = x.size();
  float min = x[0], max = x[0], sum_w = weights[0], sum_x = sum_w * x[0];
  for (size_t i = 1; i < n; ++i) {
    min = std::min(min, x[i]);
    max = std::max(max, x[i]);
    sum_w += weights[i];
    sum_x += weights[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::fill(L.begin(), L.end(), uint8_t(0));
    *the_min = -min;
    return 0;
  }
  float iscale = float(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (size_t i = 0; i < n; ++i) {
    L[i] = uint8_t(std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax));
    const float diff = scale * float(L[i]) + min - x[i];
    best_error += weights[i] * (diff * diff);
  }
  std::vector<uint8_t> trial(n);
  for (int step = 0; step <= nstep; ++step) {
    iscale = (rmin + rdelta * float(step) + float(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (size_t i = 0; i < n; ++i) {
      const int l = std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax);
      trial[i] = uint8_t(l);
      const float w = weights[i];
      sum_l += w * float(l);
      sum_l2 += w * float(l) * float(l);
      sum_xl += w * float(l) * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (!(D > 0)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
    if (this_min > 0) {
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    float error = 0;
    for (size_t i = 0; i < n; ++i) {
      const float diff = this_scale * float(trial[i]) + this_min - x[i];
      error += weights[i] * (diff * diff);
    }
    if (error < best_error) {
      std::copy(trial.begin(), trial.end(), L.begin());
      best_error = error;
      scale = this_scale;
      min = this_min;
    }
  }
  *the_min = -min;
  return scale;
}

}  // namespace astrai::quant
