// The quantized weight formats the device keeps as they are in a GGUF file
// (issue 29: a Q4_K_M file stays about its size in GPU memory). Each is a
// ggml block type: a fixed number of weights of one matrix row in a fixed
// number of bytes; the layouts are drawn in engine/model_files/quant/ (one
// file per type, written from ggml-common.h), and the device decodes each
// weight with the same float operations as those host decoders, so its
// weights are theirs bit for bit.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace astrai::cuda {

enum class QuantFormat { Q8_0, Q4_0, Q4_K, Q5_K, Q6_K };

struct QuantFormatInfo {
  std::string_view name;  // ggml's type name
  int block_elements;     // weights per block
  int block_bytes;        // bytes per block
};

constexpr QuantFormatInfo quant_format_info(QuantFormat f) {
  switch (f) {
    case QuantFormat::Q8_0: return {"Q8_0", 32, 34};
    case QuantFormat::Q4_0: return {"Q4_0", 32, 18};
    case QuantFormat::Q4_K: return {"Q4_K", 256, 144};
    case QuantFormat::Q5_K: return {"Q5_K", 256, 176};
    case QuantFormat::Q6_K: return {"Q6_K", 256, 210};
  }
  return {"?", 1, 1};
}

inline constexpr QuantFormat kQuantFormats[] = {QuantFormat::Q8_0, QuantFormat::Q4_0, QuantFormat::Q4_K,
                                                QuantFormat::Q5_K, QuantFormat::Q6_K};

// The device format of a ggml type name ("Q4_K"), or nullopt for a type the
// device does not keep quantized (it is then decoded at load).
inline std::optional<QuantFormat> quant_format_named(std::string_view ggml_type) {
  for (const QuantFormat f : kQuantFormats)
    if (quant_format_info(f).name == ggml_type) return f;
  return std::nullopt;
}

// Bytes of a [rows, cols] matrix in format f (cols a multiple of its block).
constexpr size_t quant_matrix_bytes(QuantFormat f, size_t rows, size_t cols) {
  const QuantFormatInfo i = quant_format_info(f);
  return rows * (cols / size_t(i.block_elements)) * size_t(i.block_bytes);
}

}  // namespace astrai::cuda
