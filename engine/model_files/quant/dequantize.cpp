// Dispatch from a ggml type to its block decoder (see dequantize.h).
#include "engine/model_files/quant/dequantize.h"

#include <stdexcept>
#include <string>

#include "engine/model_files/quant/block_decoders.h"

namespace astrai::quant {
namespace {

// Runs decode on each of the blocks: Bytes bytes in, Elements floats out.
template <size_t Bytes, size_t Elements>
void decode_blocks(void (*decode)(std::span<const std::byte, Bytes>, std::span<float, Elements>), GgmlType type,
                   std::span<const std::byte> blocks, std::span<float> out) {
  const size_t n_blocks = blocks.size() / Bytes;
  if (blocks.size() % Bytes != 0 || out.size() != n_blocks * Elements)
    throw std::logic_error("dequantize " + ggml_type_name(type) + ": " + std::to_string(blocks.size()) +
                           " bytes do not make " + std::to_string(out.size()) + " elements");
  for (size_t b = 0; b < n_blocks; ++b)
    decode(blocks.subspan(b * Bytes).template first<Bytes>(), out.subspan(b * Elements).template first<Elements>());
}

}  // namespace

bool can_dequantize(GgmlType type) {
  switch (type) {
    case GgmlType::Q4_0: case GgmlType::Q4_1: case GgmlType::Q5_0: case GgmlType::Q5_1: case GgmlType::Q8_0:
    case GgmlType::IQ4_NL: case GgmlType::MXFP4: case GgmlType::Q2_K: case GgmlType::Q3_K: case GgmlType::Q4_K: case GgmlType::Q5_K:
    case GgmlType::Q6_K:
      return true;
    default: return false;
  }
}

void dequantize(GgmlType type, std::span<const std::byte> blocks, std::span<float> out) {
  switch (type) {
    case GgmlType::Q4_0: return decode_blocks(decode_q4_0, type, blocks, out);
    case GgmlType::Q4_1: return decode_blocks(decode_q4_1, type, blocks, out);
    case GgmlType::Q5_0: return decode_blocks(decode_q5_0, type, blocks, out);
    case GgmlType::Q5_1: return decode_blocks(decode_q5_1, type, blocks, out);
    case GgmlType::Q8_0: return decode_blocks(decode_q8_0, type, blocks, out);
    case GgmlType::IQ4_NL: return decode_blocks(decode_iq4_nl, type, blocks, out);
    case GgmlType::MXFP4: return decode_blocks(decode_mxfp4, type, blocks, out);
    case GgmlType::Q2_K: return decode_blocks(decode_q2_k, type, blocks, out);
    case GgmlType::Q3_K: return decode_blocks(decode_q3_k, type, blocks, out);
    case GgmlType::Q4_K: return decode_blocks(decode_q4_k, type, blocks, out);
    case GgmlType::Q5_K: return decode_blocks(decode_q5_k, type, blocks, out);
    case GgmlType::Q6_K: return decode_blocks(decode_q6_k, type, blocks, out);
    default: throw std::logic_error("dequantize: " + ggml_type_name(type) + " is not a quantized type AstrAI decodes");
  }
}

}  // namespace astrai::quant
