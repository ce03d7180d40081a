// The model `astrai serve` serves when given none: a synthetic model with
// seeded random weights in the shape of stories260K and a made-up vocabulary,
// written once as GGUF to a cache folder and reused. Its output is
// meaningless; it exists so that the server, its clients and their tests run
// anywhere without downloading a model.
#pragma once

#include <filesystem>
#include <string>

namespace astrai {

// $XDG_CACHE_HOME/astrai, else $HOME/.cache/astrai. Throws std::runtime_error
// when neither variable is set.
std::filesystem::path default_cache_dir();

// The synthetic model's file under cache_dir, written (atomically: to a
// temporary name, then renamed) when absent. Throws std::runtime_error when
// the folder or the file cannot be written.
std::filesystem::path ensure_default_model(const std::filesystem::path& cache_dir);

// The warning `astrai serve` prints when it serves the synthetic model.
std::string default_model_warning(const std::filesystem::path& path);

}  // namespace astrai
