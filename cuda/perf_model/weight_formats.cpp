// llama.cpp's choice of type per tensor, read in its src/llama-quant.cpp
// (ggml-org/llama.cpp at 007dbbf, llama_tensor_get_type_impl() and
// llama_ftype_get_default_type()), for a dense Llama of 8B (not Falcon, not
// 70B, no experts, separate q/k/v, an untied output.weight):
//  - Q8_0: every matrix takes the preset's type Q8_0; output.weight keeps it
//    (the classifier's rule turns a type to Q6_K only "if new_type !=
//    GGML_TYPE_Q8_0").
//  - Q4_K_M: the preset's type is Q4_K (attn_q, attn_k, attn_output,
//    ffn_gate, ffn_up and token_embd keep it); attn_v and ffn_down are Q6_K
//    where use_more_bits(i, n) holds, i the layer (attn_v counts its tensors
//    in the loader's order, weight_name_comparer: by layer), n the layers:
//      i < n/8 || i >= 7*n/8 || (i - n/8) % 3 == 2
//    (for 32 layers: 0-3, 6, 9, ..., 27, 28-31: 16 of 32); output.weight is
//    Q6_K (the classifier's rule, its 4096 columns being whole 256-blocks).
// token_embd takes the preset's type in both (Q8_0; Q4_K), and the device
// keeps it so (its gather decodes the rows a step reads).
#include "cuda/perf_model/weight_formats.h"

namespace astrai::cuda::perf {

std::string weights_name(Weights w) {
  switch (w) {
    case Weights::BF16: return "bf16";
    case Weights::Q8_0: return "Q8_0";
    case Weights::Q4_K_M: return "Q4_K_M";
  }
  return "?";
}

namespace {

// llama.cpp's use_more_bits (C++ integer division and remainder, as there).
bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

}  // namespace

std::optional<QuantFormat> matrix_format(Weights w, Matrix m, int layer, int layers) {
  switch (w) {
    case Weights::BF16: return std::nullopt;
    case Weights::Q8_0: return QuantFormat::Q8_0;
    case Weights::Q4_K_M:
      if (m == Matrix::Classifier) return QuantFormat::Q6_K;
      if ((m == Matrix::V || m == Matrix::Down) && use_more_bits(layer, layers)) return QuantFormat::Q6_K;
      return QuantFormat::Q4_K;
  }
  return std::nullopt;
}

double matrix_bytes(std::optional<QuantFormat> format, int rows, int cols) {
  if (!format) return 2.0 * double(rows) * double(cols);
  return double(quant_matrix_bytes(*format, size_t(rows), size_t(cols)));
}

}  // namespace astrai::cuda::perf
