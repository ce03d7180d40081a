// Dispatch from a ggml type to its block encoder (see quantize.h).
#include "engine/model_files/quant/quantize.h"

#include <stdexcept>
#include <string>

#include "engine/model_files/quant/block_encoders.h"

namespace astrai::quant {
namespace {

template <size_t Elements, size_t Bytes>
void encode_blocks(void (*encode)(std::span<const float, Elements>, std::span<std::byte, Bytes>), GgmlType type,
                   std::span<const float> x, std::span<std::byte> out) {
  const size_t n_blocks = x.size() / Elements;
  if (x.size() % Elements != 0 || out.size() != n_blocks * Bytes)
    throw std::logic_error("quantize " + ggml_type_name(type) + ": " + std::to_string(x.size()) +
                           " elements do not make " + std::to_string(out.size()) + " bytes");
  for (size_t b = 0; b < n_blocks; ++b)
    encode(x.subspan(b * Elements).template first<Elements>(), out.subspan(b * Bytes).template first<Bytes>());
}

}  // namespace

bool can_quantize(GgmlType type) {
  return type == GgmlType::Q8_0 || type == GgmlType::Q4_0 || type == GgmlType::Q4_K || type == GgmlType::Q6_K;
}

void quantize(GgmlType type, std::span<const float> x, std::span<std::byte> out) {
  switch (type) {
    case GgmlType::Q8_0: return encode_blocks(encode_q8_0, type, x, out);
    case GgmlType::Q4_0: return encode_blocks(encode_q4_0, type, x, out);
    case GgmlType::Q4_K: return encode_blocks(encode_q4_k, type, x, out);
    case GgmlType::Q6_K: return encode_blocks(encode_q6_k, type, x, out);
    default: throw std::logic_error("quantize: AstrAI does not write " + ggml_type_name(type));
  }
}

}  // namespace astrai::quant
