#include "cli/default_model.h"

#include <cstdlib>
#include <stdexcept>
#include <unistd.h>

#include "engine/model_files/gguf/gguf_model.h"
#include "reference/synthetic_model.h"
#include "engine/tokenizer/synthetic_tokenizer.h"

namespace astrai {

namespace {
// Bump the version in the name whenever the recipe below changes, so that an
// old cached file is never mistaken for the new one.
constexpr const char* kFileName = "synthetic-stories260K-v1.gguf";
constexpr const char* kModelName = "astrai-synthetic-stories260K";
constexpr uint64_t kSeed = 20240601;
}  // namespace

std::filesystem::path default_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::filesystem::path(xdg) / "astrai";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::filesystem::path(home) / ".cache" / "astrai";
  throw std::runtime_error("no cache folder for the synthetic model: neither XDG_CACHE_HOME nor HOME is set "
                           "(pass --model FILE to serve a real model)");
}

std::filesystem::path ensure_default_model(const std::filesystem::path& cache_dir) {
  const std::filesystem::path path = cache_dir / kFileName;
  if (std::filesystem::exists(path)) return path;
  std::error_code error;
  std::filesystem::create_directories(cache_dir, error);
  if (error) throw std::runtime_error("cannot create the cache folder " + cache_dir.string() + ": " + error.message());
  const ModelConfig config = preset_config("stories260K");
  const ModelWeights weights = make_synthetic_weights(config, kSeed);
  const Tokenizer tokenizer = make_synthetic_tokenizer(config.vocab_size);
  // A unique temporary name, so that two servers starting at once never
  // read each other's half-written file.
  const std::filesystem::path temporary = path.string() + ".tmp." + std::to_string(::getpid());
  write_gguf_model(temporary.string(), weights, tokenizer, GgufDType::F32, kModelName);
  std::filesystem::rename(temporary, path, error);
  if (error) {
    std::filesystem::remove(temporary);
    throw std::runtime_error("cannot move the synthetic model into place at " + path.string() + ": " +
                             error.message());
  }
  return path;
}

std::string default_model_warning(const std::filesystem::path& path) {
  const std::string rule(78, '*');
  return rule + "\n" +
         "* WARNING: no --model given. Serving a SYNTHETIC model with RANDOM weights:\n"
         "*   " + path.string() + "\n"
         "* Its output is MEANINGLESS text. It exists to try the API and run tests.\n"
         "* To serve a real model:  astrai serve --model model.gguf\n"
         "*   or a llama2.c checkpoint: astrai serve --model stories15M.bin --tokenizer tokenizer.bin\n" +
         rule + "\n";
}

}  // namespace astrai
