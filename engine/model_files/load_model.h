// One entry point for every model file the engine reads: GGUF (detected by its
// "GGUF" magic) or a llama2.c checkpoint plus its tokenizer.bin; and the
// conversion of llama2.c checkpoints to GGUF (`astrai convert`).
#pragma once

#include <string>

#include "engine/model_files/gguf_model.h"           // write_gguf_model, GgufDType
#include "engine/model_files/synthetic_tokenizer.h"  // make_synthetic_tokenizer
#include "engine/tokenizer/tokenizer.h"
#include "reference/model_weights.h"

namespace astrai {

struct LoadedModel {
  ModelWeights weights;
  Tokenizer tokenizer;
  std::string name;           // general.name, else the file name without extension
  std::string format;         // "gguf" or "llama2c"
  std::string chat_template;  // from GGUF, may be empty
};

// "gguf" when the file starts with the GGUF magic, else "llama2c". Throws
// std::runtime_error when the file cannot be opened.
std::string detect_model_format(const std::string& model_path);

// The tokenizer a llama2.c checkpoint uses when none is given: tok<vocab>.bin
// beside the model, else tokenizer.bin beside it. Throws std::runtime_error
// naming both candidates when neither exists.
std::string find_llama2c_tokenizer(const std::string& model_path, int vocab_size);

// Loads a GGUF or llama2.c model. For llama2.c, tokenizer_path names the
// tokenizer.bin ("" = find_llama2c_tokenizer). For GGUF the tokenizer comes
// from the file unless tokenizer_path names a llama2.c tokenizer.bin to use
// instead. Throws std::runtime_error naming the file and the problem.
LoadedModel load_model(const std::string& model_path, const std::string& tokenizer_path = "");

// llama2.c checkpoint (+ tokenizer, "" = find_llama2c_tokenizer) -> GGUF at
// out_path, named after the checkpoint's file name.
void convert_llama2c_to_gguf(const std::string& model_path, const std::string& tokenizer_path,
                             const std::string& out_path, GgufDType dtype);

}  // namespace astrai
