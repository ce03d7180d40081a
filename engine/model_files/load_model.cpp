// Format detection and loading of Hugging Face folders, GGUF and llama2.c models (see load_model.h).
#include "engine/model_files/load_model.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>


#include "engine/chat/hf_chat_template.h"
#include "engine/model_files/hf/hf_folder.h"
#include "engine/model_files/llama2c/llama2c_checkpoint.h"
#include "engine/text/read_file.h"

namespace astrai {
namespace {

Tokenizer load_llama2c_tokenizer(const std::string& model_path, const std::string& tokenizer_path, int vocab) {
  const std::string path = tokenizer_path.empty() ? find_llama2c_tokenizer(model_path, vocab) : tokenizer_path;
  return Tokenizer::load_llama2c(path, vocab);
}

// chat_template.jinja beside the other files (newer transformers save it so),
// else tokenizer_config.json's chat_template; "" for a base model without one.
std::string folder_chat_template(const HfModelFolder& f, const std::string& dir) {
  const auto jinja = std::filesystem::path(dir) / "chat_template.jinja";
  if (std::filesystem::is_regular_file(jinja)) return read_whole_file(jinja.string(), jinja.string());
  return read_chat_template(f.tokenizer_config_json);
}

void refuse_tokenizer_for_folder(const std::string& dir, const std::string& tokenizer_path) {
  if (!tokenizer_path.empty())
    throw std::runtime_error(dir + ": a Hugging Face folder brings its own tokenizer (no --tokenizer)");
}

// A folder's tokenizer, chat template, name and generation defaults beside
// its `weights` (read or to be read).
template <class Weights>
LoadedModelOf<Weights> hf_model(HfModelFolder f, Weights weights, const std::string& dir) {
  if (f.tokenizer_json.empty() || f.tokenizer_config_json.empty())
    throw std::runtime_error(dir + ": a model folder needs tokenizer.json and tokenizer_config.json");
  Tokenizer tokenizer = Tokenizer::load_hf(f.tokenizer_json, f.tokenizer_config_json, f.generation.eos_token_ids,
                                           f.weights.config.vocab_size);
  std::string chat_template = folder_chat_template(f, dir);
  return LoadedModelOf<Weights>{std::move(weights), std::move(tokenizer), f.name, ModelFormat::HfFolder,
                                std::move(chat_template), std::move(f.generation)};
}

}  // namespace

std::string model_format_name(ModelFormat format) {
  switch (format) {
    case ModelFormat::HfFolder: return "hf";
    case ModelFormat::Gguf: return "gguf";
    case ModelFormat::Llama2c: return "llama2c";
  }
  return "?";
}

ModelFormat detect_model_format(const std::string& model_path) {
  if (is_hf_folder(model_path)) return ModelFormat::HfFolder;
  std::ifstream in(model_path, std::ios::binary);
  if (!in) throw std::runtime_error(model_path + ": cannot open model file");
  char magic[4] = {};
  in.read(magic, 4);
  return (in.gcount() == 4 && std::string(magic, 4) == "GGUF") ? ModelFormat::Gguf : ModelFormat::Llama2c;
}

std::string find_llama2c_tokenizer(const std::string& model_path, int vocab_size) {
  const auto dir = std::filesystem::path(model_path).parent_path();
  const auto specific = dir / ("tok" + std::to_string(vocab_size) + ".bin");
  const auto generic = dir / "tokenizer.bin";
  for (const auto& candidate : {specific, generic})
    if (std::filesystem::is_regular_file(candidate)) return candidate.string();
  throw std::runtime_error(model_path + ": a llama2.c checkpoint needs a tokenizer; none given and neither " +
                           specific.string() + " nor " + generic.string() + " exists");
}

OpenedModel open_model(const std::string& model_path, const std::string& tokenizer_path) {
  const ModelFormat format = detect_model_format(model_path);
  if (format == ModelFormat::HfFolder) {
    refuse_tokenizer_for_folder(model_path, tokenizer_path);
    HfFolderSource f = open_hf_folder(model_path);
    return hf_model(std::move(f.folder), std::move(f.weights), model_path);
  }
  if (format == ModelFormat::Gguf) {
    GgufModelFile g = open_gguf_model(model_path);
    Tokenizer tokenizer = tokenizer_path.empty()
                              ? std::move(g.tokenizer)
                              : Tokenizer::load_llama2c(tokenizer_path, g.weights.config.vocab_size);
    const std::string name = g.name.empty() ? std::filesystem::path(model_path).stem().string() : g.name;
    return OpenedModel{std::move(g.weights), std::move(tokenizer), name, ModelFormat::Gguf, g.chat_template,
                       std::nullopt};
  }
  auto weights = std::make_shared<const ModelWeights>(load_llama2c_checkpoint(model_path));
  Tokenizer tokenizer = load_llama2c_tokenizer(model_path, tokenizer_path, weights->config.vocab_size);
  const std::string name = std::filesystem::path(model_path).stem().string();
  return OpenedModel{model_source(std::move(weights)), std::move(tokenizer), name, ModelFormat::Llama2c, "",
                     std::nullopt};
}

LoadedModel load_model(const std::string& model_path, const std::string& tokenizer_path) {
  OpenedModel m = open_model(model_path, tokenizer_path);
  return LoadedModel{read_model_weights(m.weights), std::move(m.tokenizer), std::move(m.name), m.format,
                     std::move(m.chat_template), std::move(m.generation)};
}

void convert_to_gguf(const std::string& model_path, const std::string& tokenizer_path, const std::string& out_path,
                     GgufDType dtype) {
  const ModelFormat format = detect_model_format(model_path);
  if (format == ModelFormat::Gguf)
    throw std::runtime_error(model_path + ": is already a GGUF file (convert takes a llama2.c checkpoint or a folder)");
  if (format == ModelFormat::HfFolder) {
    // Tensor by tensor from the safetensors files: the model is never whole
    // in memory (docs/model-files.md, "Converting in bounded memory").
    const OpenedModel m = open_model(model_path, tokenizer_path);
    write_gguf_model(out_path, m.weights, m.tokenizer, dtype, m.name, m.chat_template);
    return;
  }
  // llama2.c checkpoints (110M parameters at the largest) are read whole.
  const LoadedModel m = load_model(model_path, tokenizer_path);
  write_gguf_model(out_path, m.weights, m.tokenizer, dtype, m.name, m.chat_template);
}

}  // namespace astrai
