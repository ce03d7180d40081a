// Q4_0 encoder (layout in q4_0.cpp), as llama.cpp's quantize_row_q4_0_ref:
// the value of largest magnitude, m, maps to -8 (d = m / -8), and
// q = min(15, trunc(x / d + 8.5)).
#include <algorithm>
#include <cmath>

#include "engine/model_files/quant/block_encoders.h"
#include "engine/model_files/quant/block_writer.h"

namespace astrai::quant {

void encode_q4_0(std::span<const float, kQK> x, std::span<std::byte, 18> block) {
  float amax = 0, max = 0;
  for (const float v : x)
    if (std::fabs(v) > amax) amax = std::fabs(v), max = v;
  const float d = max / -8;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  put_half(block, 0, d);
  auto q = [&](float v) { return std::min(15, int(int8_t(v * id + 8.5f))); };
  for (size_t j = 0; j < 16; ++j) put_byte(block, 2 + j, unsigned(q(x[j]) | q(x[j + 16]) << 4));
}

}  // namespace astrai::quant
