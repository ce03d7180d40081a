// llama.cpp as an oracle for quantized GGUF files (tests/engine/model_files/
// llama_cpp_oracle, installed by `npm ci` there): quantize.py runs llama.cpp's
// own quantizer on a GGUF, greedy.mjs runs a GGUF in llama.cpp through
// node-llama-cpp (greedy tokens and each step's distribution), tokenize.mjs
// runs its tokenizer on a file's vocabulary, ggml_rows.py runs ggml's own
// block conversions. Each returns nullopt with a WARN saying what is missing
// when python3, node or the packages are absent, so the caller skips.
#pragma once

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <span>
#include <vector>

#include "engine/model_files/gguf/gguf_types.h"

#include "tests/support/shared_data.h"

namespace astrai::test {

inline std::filesystem::path llama_cpp_oracle_dir() {
  return source_root() / "tests/engine/model_files/llama_cpp_oracle";
}

// Whether the oracle can run; WARNs what is missing when it cannot.
inline bool llama_cpp_oracle_available() {
  const auto libs = llama_cpp_oracle_dir() / "node_modules/@node-llama-cpp/linux-x64/bins/linux-x64";
  if (std::system("python3 --version >/dev/null 2>&1") != 0) {
    ASTRAI_MISSING("python3 not found; llama.cpp's quantizer is called through python3's ctypes");
    return false;
  }
  if (std::system("node --version >/dev/null 2>&1") != 0) {
    ASTRAI_MISSING("node not found; llama.cpp is run through node-llama-cpp (Node.js >= 20)");
    return false;
  }
  if (!std::filesystem::exists(libs)) {
    ASTRAI_MISSING(libs.string() << " not found (run `npm ci --omit=optional` in "
                     << llama_cpp_oracle_dir().string() << ")");
    return false;
  }
  return true;
}

// llama.cpp's quantizer: `in` -> `out` with a llama-quantize preset ("Q4_K_M").
inline void llama_cpp_quantize(const std::filesystem::path& in, const std::filesystem::path& out,
                               const std::string& preset) {
  const auto log = std::filesystem::path(out).replace_extension(".log");
  const std::string cmd = "python3 '" + (llama_cpp_oracle_dir() / "quantize.py").string() + "' '" + in.string() +
                          "' '" + out.string() + "' " + preset + " > '" + log.string() + "' 2>&1";
  INFO(cmd);
  REQUIRE(std::system(cmd.c_str()) == 0);
}

// What llama.cpp does after one prompt: its greedy tokens, and before each
// one the log-probability of every vocabulary token (-inf where it
// underflowed to 0).
struct LlamaCppRun {
  std::vector<int> tokens;
  std::vector<std::vector<double>> logp;
};

// llama.cpp's greedy run of n tokens after each prompt.
inline std::vector<LlamaCppRun> llama_cpp_greedy(const std::filesystem::path& model,
                                                 const std::vector<std::vector<int>>& prompts, int n) {
  const auto out = std::filesystem::path(model).replace_extension(".greedy");
  std::string cmd = "node '" + (llama_cpp_oracle_dir() / "greedy.mjs").string() + "' '" + model.string() + "' " +
                    std::to_string(n);
  for (const auto& p : prompts) {
    cmd += " ";
    for (size_t i = 0; i < p.size(); ++i) cmd += (i ? "," : "") + std::to_string(p[i]);
  }
  cmd += " > '" + out.string() + "'";
  INFO(cmd);
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::vector<LlamaCppRun> runs;
  std::ifstream in(out);
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    LlamaCppRun run;
    run.tokens = j.at("tokens").get<std::vector<int>>();
    for (const auto& row : j.at("logp")) {
      std::vector<double> r;
      for (const auto& v : row) r.push_back(v.is_null() ? -INFINITY : v.get<double>());
      run.logp.push_back(std::move(r));
    }
    runs.push_back(std::move(run));
  }
  REQUIRE(runs.size() == prompts.size());
  return runs;
}

// llama.cpp's ids for each text, tokenized with special tokens parsed and
// no BOS (tokenize.mjs), by the vocabulary in `model`.
inline std::vector<std::vector<int>> llama_cpp_tokenize(const std::filesystem::path& model,
                                                        const std::vector<std::string>& texts) {
  const auto in = std::filesystem::path(model).replace_extension(".texts");
  const auto out = std::filesystem::path(model).replace_extension(".ids");
  {
    std::ofstream f(in);
    for (const auto& t : texts) f << nlohmann::json(t).dump() << "\n";
  }
  const std::string cmd = "node '" + (llama_cpp_oracle_dir() / "tokenize.mjs").string() + "' '" + model.string() +
                          "' < '" + in.string() + "' > '" + out.string() + "'";
  INFO(cmd);
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::vector<std::vector<int>> ids;
  std::ifstream f(out);
  for (std::string line; std::getline(f, line);) ids.push_back(nlohmann::json::parse(line).get<std::vector<int>>());
  REQUIRE(ids.size() == texts.size());
  return ids;
}

// ggml's name of a type in its function names: "Q4_K" -> "q4_K", "IQ4_NL" -> "iq4_nl".
inline std::string ggml_function_suffix(GgmlType type) {
  std::string name = ggml_type_name(type);
  for (auto& c : name) c = char(std::tolower(c));
  if (name.ends_with("_k")) name.back() = 'K';
  return name;
}

// Runs `ggml_rows.py MODE TYPE IN OUT [N]` on `input`'s bytes; returns OUT's bytes.
inline std::string run_ggml_rows(const std::string& mode, GgmlType type, std::span<const std::byte> input,
                                 const std::string& extra = "") {
  static int counter = 0;
  const auto in = scratch_dir() / ("ggml-rows-" + std::to_string(counter++) + ".in");
  const auto out = std::filesystem::path(in).replace_extension(".out");
  std::ofstream(in, std::ios::binary).write(reinterpret_cast<const char*>(input.data()), std::streamsize(input.size()));
  const std::string cmd = "python3 '" + (llama_cpp_oracle_dir() / "ggml_rows.py").string() + "' " + mode + " " +
                          ggml_function_suffix(type) + " '" + in.string() + "' '" + out.string() + "' " + extra;
  INFO(cmd);
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream file(out, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), {});
}

// ggml's own dequantize_row_<type> (libggml-base) of whole blocks of `type`.
inline std::vector<float> ggml_dequantize(GgmlType type, std::span<const std::byte> blocks) {
  const std::string bytes = run_ggml_rows("dequantize", type, blocks);
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  return values;
}

// ggml's own quantizer (ggml_quantize_chunk, no importance matrix) of rows of
// `row` floats into blocks of `type`.
inline std::vector<std::byte> ggml_quantize(GgmlType type, std::span<const float> x, size_t row) {
  const std::string bytes = run_ggml_rows("quantize", type, std::as_bytes(x), std::to_string(row));
  const auto* p = reinterpret_cast<const std::byte*>(bytes.data());
  return std::vector<std::byte>(p, p + bytes.size());
}

}  // namespace astrai::test
