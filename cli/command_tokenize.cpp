// astrai tokenize: the ids of each input line, for checking against other
// tokenizers. Plain mode: one line of space-separated ids per input line,
// the tokenizer's prefix (BOS) first. --jsonl: each input line is one JSON
// string and each output line the JSON array of the ids of that text alone
// (no BOS or other added prefix), for any tokenizer kind.
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/arguments.h"
#include "cli/commands.h"
#include "engine/model_files/load_model.h"

namespace astrai::cli {

namespace {

// --tokenizer FILE: tokenizer.json (with tokenizer_config.json beside it) or
// a llama2.c tokenizer.bin; --model: the tokenizer of a model file or folder.
Tokenizer load_tokenizer(const Arguments& args) {
  if (args.has("--model")) return open_model(args.get("--model"), args.get("--tokenizer")).tokenizer;
  if (!args.has("--tokenizer")) throw std::invalid_argument("--tokenizer or --model is required");
  const std::string path = args.get("--tokenizer");
  if (path.ends_with(".json")) {
    const std::string config = args.has("--tokenizer-config") ? args.get("--tokenizer-config")
                                                              : std::filesystem::path(path).replace_filename(
                                                                    "tokenizer_config.json").string();
    return Tokenizer::load_hf(path, config);
  }
  return Tokenizer::load_llama2c(path, int(args.get_int("--vocab-size")));
}

}  // namespace

int run_tokenize(std::span<const std::string_view> argv) {
  Arguments args("astrai tokenize (--tokenizer T [--vocab-size N] | --model M) [--jsonl] < lines");
  args.option("--tokenizer", "a llama2.c tokenizer.bin or a Hugging Face tokenizer.json")
      .option("--tokenizer-config", "tokenizer_config.json (BOS, EOS) for a tokenizer.json (default: beside it)")
      .option("--vocab-size", "pieces in a tokenizer.bin (0 = every piece in the file)", "0")
      .option("--model", "a GGUF file, a llama2.c checkpoint or a Hugging Face folder: its tokenizer")
      .flag("--jsonl", "input lines are JSON strings; print a JSON array of ids per line, without BOS");
  if (int status = args.parse(argv); status >= 0) return status;
  return run_reporting_errors("tokenize", [&] {
    const Tokenizer tokenizer = load_tokenizer(args);
    const bool jsonl = args.has("--jsonl");
    size_t line_number = 0;
    for (std::string line; std::getline(std::cin, line);) {
      ++line_number;
      if (!jsonl) {
        const auto ids = tokenizer.encode(line, true);
        for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
        std::cout << "\n";
        continue;
      }
      nlohmann::json text;
      try {
        text = nlohmann::json::parse(line);
      } catch (const nlohmann::json::exception&) {
      }
      if (!text.is_string())
        throw std::invalid_argument("input line " + std::to_string(line_number) + " is not one JSON string");
      std::cout << nlohmann::json(tokenizer.encode(text.get<std::string>(), false)).dump() << "\n";
    }
    return 0;
  });
}

}  // namespace astrai::cli
