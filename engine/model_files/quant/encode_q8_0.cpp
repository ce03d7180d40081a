// Q8_0 encoder (layout in q8_0.cpp): d = max|x| / 127, q = round(x / d), ties
// away from zero (roundf), as llama.cpp's quantize_row_q8_0_ref.
#include <cmath>

#include "engine/model_files/quant/block_encoders.h"
#include "engine/model_files/quant/block_writer.h"

namespace astrai::quant {

void encode_q8_0(std::span<const float, kQK> x, std::span<std::byte, 34> block) {
  float amax = 0;
  for (const float v : x) amax = std::fmax(amax, std::fabs(v));
  const float d = amax / 127;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  put_half(block, 0, d);
  for (size_t j = 0; j < kQK; ++j) put_byte(block, 2 + j, unsigned(int8_t(std::round(x[j] * id))));
}

}  // namespace astrai::quant
