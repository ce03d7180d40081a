// Q4_K encoder (layout in q4_k.cpp and k_scale_min.h), as llama.cpp's
// quantize_row_q4_K_ref: each group of 32 gets its best scale and minimum
// (fit_scale_min, errors weighted by rms(group) + |x|); the eight scales
// and minimums are then stored as 6-bit multiples of d = max scale / 63 and
// dmin = max min / 63, and every weight is re-rounded against the stored
// (rounded) scale and minimum.
#include <algorithm>
#include <array>
#include <cmath>

#include "engine/model_files/quant/block_encoders.h"
#include "engine/model_files/quant/block_writer.h"
#include "engine/model_files/quant/k_scale_min.h"
#include "engine/model_files/quant/scale_search.h"

namespace astrai::quant {

void encode_q4_k(std::span<const float, kQK_K> x, std::span<std::byte, 144> block) {
  std::array<uint8_t, kQK_K> L{};
  std::array<float, 8> scales{}, mins{};
  float max_scale = 0, max_min = 0;
  for (size_t g = 0; g < 8; ++g) {
    const auto group = x.subspan(32 * g, 32);
    float sum_x2 = 0;
    for (const float v : group) sum_x2 += v * v;
    const float av_x = std::sqrt(sum_x2 / 32);
    std::array<float, 32> weights;
    for (size_t l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(group[l]);
    scales[g] = fit_scale_min(group, weights, 15, -1.0f, 0.1f, 20, std::span(L).subspan(32 * g, 32), &mins[g]);
    max_scale = std::max(max_scale, scales[g]);
    max_min = std::max(max_min, mins[g]);
  }
  const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
  std::array<uint8_t, 12> packed{};
  for (size_t g = 0; g < 8; ++g) {
    const uint8_t ls = uint8_t(std::min(63, nearest_int(inv_scale * scales[g])));
    const uint8_t lm = uint8_t(std::min(63, nearest_int(inv_min * mins[g])));
    if (g < 4) {
      packed[g] = ls;
      packed[g + 4] = lm;
    } else {  // k_scale_min.h: low nibbles in byte g + 4, top two bits in bits 6-7 of bytes g - 4 and g
      packed[g + 4] = uint8_t((ls & 0xF) | (lm & 0xF) << 4);
      packed[g - 4] |= uint8_t((ls >> 4) << 6);
      packed[g] |= uint8_t((lm >> 4) << 6);
    }
  }
  for (size_t i = 0; i < 12; ++i) put_byte(block, 4 + i, packed[i]);
  const float d = put_half(block, 0, max_scale / 63);
  const float dmin = put_half(block, 2, max_min / 63);
  for (size_t g = 0; g < 8; ++g) {
    const auto [sc, m] = k_scale_min(block, 4, g);
    const float dg = d * float(sc);
    if (dg == 0) continue;
    const float dm = dmin * float(m);
    for (size_t l = 0; l < 32; ++l) L[32 * g + l] = uint8_t(std::clamp(nearest_int((x[32 * g + l] + dm) / dg), 0, 15));
  }
  for (size_t c = 0; c < 4; ++c)  // 64 weights per 32 bytes: low nibbles the first 32, high the next
    for (size_t l = 0; l < 32; ++l) put_byte(block, 16 + 32 * c + l, unsigned(L[64 * c + l] | L[64 * c + 32 + l] << 4));
}

}  // namespace astrai::quant
