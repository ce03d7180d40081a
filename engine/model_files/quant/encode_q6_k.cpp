// Q6_K encoder (layout in q6_k.cpp), as llama.cpp's quantize_row_q6_K_ref:
// each group of 16 gets its best symmetric scale (fit_symmetric, 6-bit
// grid), the scales are stored as int8 multiples of d = -(the scale of
// largest magnitude) / 128, and every weight is re-rounded against its
// stored scale.
#include <algorithm>
#include <array>
#include <cmath>

#include "engine/model_files/quant/block_encoders.h"
#include "engine/model_files/quant/block_writer.h"
#include "engine/model_files/quant/scale_search.h"

namespace astrai::quant {

void encode_q6_k(std::span<const float, kQK_K> x, std::span<std::byte, 210> block) {
  std::array<uint8_t, kQK_K> L{};
  std::array<float, 16> scales{};
  float max_scale = 0, max_abs_scale = 0;
  for (size_t g = 0; g < 16; ++g) {
    scales[g] = fit_symmetric(x.subspan(16 * g, 16), 32, std::span(L).subspan(16 * g, 16));
    if (std::fabs(scales[g]) > max_abs_scale) max_abs_scale = std::fabs(scales[g]), max_scale = scales[g];
  }
  if (max_abs_scale < 1e-15f) {  // all (near) zero: an all-zero block
    for (auto& b : block) b = std::byte(0);
    return;
  }
  const float iscale = -128.0f / max_scale;
  const float d = put_half(block, 208, 1 / iscale);
  for (size_t g = 0; g < 16; ++g) {
    const int8_t sc = int8_t(std::min(127, nearest_int(iscale * scales[g])));
    put_byte(block, 192 + g, uint8_t(sc));
    const float dg = d * float(sc);
    if (dg == 0) continue;
    for (size_t l = 0; l < 16; ++l)
      L[16 * g + l] = uint8_t(std::clamp(nearest_int(x[16 * g + l] / dg), -32, 31) + 32);
  }
  for (size_t h = 0; h < 2; ++h) {  // 128 weights: ql 64 bytes, qh 32 bytes
    for (size_t l = 0; l < 32; ++l) {
      const size_t e = 128 * h + l;
      put_byte(block, 64 * h + l, unsigned((L[e] & 0xF) | (L[e + 64] & 0xF) << 4));
      put_byte(block, 64 * h + 32 + l, unsigned((L[e + 32] & 0xF) | (L[e + 96] & 0xF) << 4));
      put_byte(block, 128 + 32 * h + l,
               unsigned(L[e] >> 4 | (L[e + 32] >> 4) << 2 | (L[e + 64] >> 4) << 4 | (L[e + 96] >> 4) << 6));
    }
  }
}

}  // namespace astrai::quant
