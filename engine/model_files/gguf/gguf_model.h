// A Llama model and its tokenizer as a GGUF file, following llama.cpp's
// conventions for architecture `llama` (metadata keys, tensor names) and its
// two vocabulary kinds (gguf_tokenizer.h: SentencePiece `llama` with '▁' for
// spaces, byte-level BPE `gpt2`). See docs/model-files.md for the full mapping.
#pragma once

#include <string>

#include "engine/model_files/model_source.h"
#include "engine/tokenizer/tokenizer.h"
#include "reference/model_weights.h"

namespace astrai {

// How write_gguf_model stores the 2-D weight matrices: a float type, or
// quantized as llama.cpp quantizes (a matrix whose rows are not whole
// blocks falls back to Q8_0, or F16 when they are not multiples of 32).
// 1-D norm weights are always F32, as llama.cpp's converters store them.
enum class GgufDType { F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K };
// "f32", "f16", "bf16", "q8_0", "q4_0", "q4_k", "q6_k" (as `astrai convert
// --dtype` takes them); throws std::invalid_argument listing the choices for
// anything else.
GgufDType parse_gguf_dtype(const std::string& name);
std::string gguf_dtype_name(GgufDType dtype);

struct GgufModel {
  ModelWeights weights;
  Tokenizer tokenizer;
  std::string name;           // general.name, "" when absent
  std::string chat_template;  // tokenizer.chat_template, "" when absent
};

// A GGUF model with its weights left in the file: metadata, config and
// tokenizer read and checked, `weights` reading (or decoding) each tensor
// from the memory-mapped file when asked, and giving quantized tensors'
// blocks as they are (the CUDA backend uploads those without a float32 copy).
struct GgufModelFile {
  ModelSource weights;  // holds the mapping
  Tokenizer tokenizer;
  std::string name;           // general.name, "" when absent
  std::string chat_template;  // tokenizer.chat_template, "" when absent
};

// Opens a `llama`, `qwen2` or `qwen3` GGUF whose tensors are F32, F16, BF16
// or a quantized type quant/dequantize.h decodes. A missing output.weight
// means a classifier tied to the embedding. Throws std::runtime_error naming
// the file and the key or tensor at fault (a tensor's: when it is read).
GgufModelFile open_gguf_model(const std::string& path);
// The same with every tensor read into float32 weights.
GgufModel read_gguf_model(const std::string& path);

// Writes weights and tokenizer (and a chat template when not empty) as a GGUF
// (version 3) of architecture `qwen3` (q/k norms), `qwen2` (q/k/v biases) or
// `llama`, with wq/wk in the RoPE layout llama.cpp runs that architecture
// with (permuted when the weights hold the other). output.weight is omitted
// when the classifier equals the embedding bit for bit; Llama 3.1 RoPE
// scaling is stored as llama.cpp's rope_freqs.weight, with its exact
// parameters in astrai.rope.llama3.* (keys llama.cpp does not read). Throws
// std::invalid_argument for a tokenizer whose size differs from the model's
// vocabulary or one GGUF cannot describe (add_gguf_tokenizer), and for RoPE
// scaling in a qwen2/qwen3 model (llama.cpp has no per-pair factors there);
// std::runtime_error when the file cannot be written.
void write_gguf_model(const std::string& path, const ModelWeights& weights, const Tokenizer& tokenizer,
                      GgufDType dtype, const std::string& name, const std::string& chat_template = "");
// The same from a source read tensor by tensor: the file is written as each
// tensor is read and converted, so the model is never whole in memory (one
// tensor's float32 values and bytes at a time). The file is the one the
// overload above writes for the same weights, byte for byte, given the same
// tie (output.weight is left out when source.tied).
void write_gguf_model(const std::string& path, const ModelSource& source, const Tokenizer& tokenizer, GgufDType dtype,
                      const std::string& name, const std::string& chat_template = "");

}  // namespace astrai
