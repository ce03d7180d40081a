// astrai tokenize: the ids of each line of standard input, one line of
// space-separated ids per input line, BOS first, for checking against other
// tokenizers.
#include <iostream>
#include <string>

#include "cli/arguments.h"
#include "cli/commands.h"
#include "engine/model_files/load_model.h"

namespace astrai::cli {

int run_tokenize(std::span<const std::string_view> argv) {
  Arguments args("astrai tokenize (--tokenizer T [--vocab-size N] | --model M) < lines.txt");
  args.option("--tokenizer", "a llama2.c tokenizer.bin")
      .option("--vocab-size", "pieces in --tokenizer (0 = every piece in the file)", "0")
      .option("--model", "a GGUF file (its tokenizer) or a llama2.c checkpoint");
  if (int status = args.parse(argv); status >= 0) return status;
  return run_reporting_errors("tokenize", [&] {
    std::optional<Tokenizer> tokenizer;
    if (args.has("--model")) {
      tokenizer = load_model(args.get("--model"), args.get("--tokenizer")).tokenizer;
    } else if (args.has("--tokenizer")) {
      tokenizer = Tokenizer::load_llama2c(args.get("--tokenizer"), int(args.get_int("--vocab-size")));
    } else {
      throw std::invalid_argument("--tokenizer or --model is required");
    }
    for (std::string line; std::getline(std::cin, line);) {
      const auto ids = tokenizer->encode(line, true);
      for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
      std::cout << "\n";
    }
    return 0;
  });
}

}  // namespace astrai::cli
