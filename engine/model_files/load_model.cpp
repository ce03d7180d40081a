// Format detection and loading of GGUF / llama2.c models (see load_model.h).
#include "engine/model_files/load_model.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "engine/model_files/llama2c_checkpoint.h"

namespace astrai {
namespace {

Tokenizer load_llama2c_tokenizer(const std::string& model_path, const std::string& tokenizer_path, int vocab) {
  const std::string path = tokenizer_path.empty() ? find_llama2c_tokenizer(model_path, vocab) : tokenizer_path;
  return Tokenizer::load_llama2c(path, vocab);
}

}  // namespace

std::string detect_model_format(const std::string& model_path) {
  std::ifstream in(model_path, std::ios::binary);
  if (!in) throw std::runtime_error(model_path + ": cannot open model file");
  char magic[4] = {};
  in.read(magic, 4);
  return (in.gcount() == 4 && std::string(magic, 4) == "GGUF") ? "gguf" : "llama2c";
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

LoadedModel load_model(const std::string& model_path, const std::string& tokenizer_path) {
  if (detect_model_format(model_path) == "gguf") {
    GgufModel g = read_gguf_model(model_path);
    Tokenizer tokenizer = tokenizer_path.empty()
                              ? std::move(g.tokenizer)
                              : Tokenizer::load_llama2c(tokenizer_path, g.weights.config.vocab_size);
    const std::string name = g.name.empty() ? std::filesystem::path(model_path).stem().string() : g.name;
    return LoadedModel{std::move(g.weights), std::move(tokenizer), name, "gguf", g.chat_template};
  }
  ModelWeights weights = load_llama2c_checkpoint(model_path);
  Tokenizer tokenizer = load_llama2c_tokenizer(model_path, tokenizer_path, weights.config.vocab_size);
  const std::string name = std::filesystem::path(model_path).stem().string();
  return LoadedModel{std::move(weights), std::move(tokenizer), name, "llama2c", ""};
}

void convert_llama2c_to_gguf(const std::string& model_path, const std::string& tokenizer_path,
                             const std::string& out_path, GgufDType dtype) {
  if (detect_model_format(model_path) == "gguf")
    throw std::runtime_error(model_path + ": is already a GGUF file (convert takes a llama2.c checkpoint)");
  const ModelWeights weights = load_llama2c_checkpoint(model_path);
  const Tokenizer tokenizer = load_llama2c_tokenizer(model_path, tokenizer_path, weights.config.vocab_size);
  write_gguf_model(out_path, weights, tokenizer, dtype, std::filesystem::path(model_path).stem().string());
}

}  // namespace astrai
