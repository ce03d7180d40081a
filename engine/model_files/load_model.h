// One entry point for every model the engine reads: a Hugging Face folder
// (config.json, safetensors, tokenizer.json), a GGUF file (detected by its
// "GGUF" magic) or a llama2.c checkpoint plus its tokenizer.bin; and their
// conversion to GGUF (`astrai convert`).
#pragma once

#include <optional>
#include <string>

#include "engine/model_files/gguf/gguf_model.h"           // write_gguf_model, GgufDType
#include "engine/model_files/hf/hf_config.h"            // HfGenerationConfig
#include "engine/model_files/model_source.h"
#include "engine/tokenizer/synthetic_tokenizer.h"  // make_synthetic_tokenizer
#include "engine/tokenizer/tokenizer.h"
#include "reference/model_weights.h"

namespace astrai {

// The three kinds of model the engine reads.
enum class ModelFormat { HfFolder, Gguf, Llama2c };
std::string model_format_name(ModelFormat format);  // "hf", "gguf", "llama2c"

// A model as the engine reads it: its weights (`Weights`), tokenizer, name,
// chat template and generation defaults.
template <class Weights>
struct LoadedModelOf {
  Weights weights;
  Tokenizer tokenizer;
  std::string name;           // general.name, else the file name without extension
  ModelFormat format = ModelFormat::Gguf;
  std::string chat_template;  // Jinja: GGUF's tokenizer.chat_template or the folder's; may be empty
  // A folder's generation_config.json (sampling defaults; its EOS ids are
  // already in the tokenizer's end-of-generation set).
  std::optional<HfGenerationConfig> generation{};
};
// The weights read into float32 (the CPU reference's, tests').
using LoadedModel = LoadedModelOf<ModelWeights>;
// The weights left in their files, read tensor by tensor by whoever runs the
// model (model_source.h): the CUDA backend uploads them one at a time,
// quantized blocks straight from the mapped file, so serving never holds a
// float32 copy of the model in host memory.
using OpenedModel = LoadedModelOf<ModelSource>;

// HfFolder for a directory holding config.json, Gguf when the file starts
// with the GGUF magic, else Llama2c. Throws std::runtime_error when the file
// cannot be opened.
ModelFormat detect_model_format(const std::string& model_path);

// The tokenizer a llama2.c checkpoint uses when none is given: tok<vocab>.bin
// beside the model, else tokenizer.bin beside it. Throws std::runtime_error
// naming both candidates when neither exists.
std::string find_llama2c_tokenizer(const std::string& model_path, int vocab_size);

// Opens a Hugging Face folder, a GGUF or a llama2.c model: tokenizer,
// template and config read and checked, the weights left in the files (a
// llama2.c checkpoint, 110M parameters at most, is read whole). For llama2.c,
// tokenizer_path names the tokenizer.bin ("" = find_llama2c_tokenizer). For
// GGUF the tokenizer comes from the file unless tokenizer_path names a
// llama2.c tokenizer.bin to use instead. A folder needs its tokenizer.json and
// tokenizer_config.json (tokenizer_path must be ""); its chat template is
// chat_template.jinja when present, else tokenizer_config.json's
// chat_template (a string, or the "default" of a list of named templates).
// Throws std::runtime_error naming the file and the problem.
OpenedModel open_model(const std::string& model_path, const std::string& tokenizer_path = "");
// The same with every weight read into float32 (open_model, then read_model_weights).
LoadedModel load_model(const std::string& model_path, const std::string& tokenizer_path = "");

// A llama2.c checkpoint (+ tokenizer, "" = find_llama2c_tokenizer) or a
// Hugging Face folder -> GGUF at out_path, as a llama.cpp user would get it:
// architecture, tensors, vocabulary (with merges) and chat template. Named
// after the checkpoint's file or the folder. Refuses a GGUF input.
void convert_to_gguf(const std::string& model_path, const std::string& tokenizer_path, const std::string& out_path,
                     GgufDType dtype);

}  // namespace astrai
