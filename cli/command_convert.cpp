// astrai convert: a llama2.c checkpoint and its tokenizer, or a Hugging Face
// folder, to one GGUF file in llama.cpp's conventions (load_model.h).
#include <iostream>

#include "cli/arguments.h"
#include "cli/commands.h"
#include "engine/model_files/load_model.h"

namespace astrai::cli {

int run_convert(std::span<const std::string_view> argv) {
  Arguments args("astrai convert --model (M.bin | DIR) [--tokenizer T.bin] -o OUT.gguf [--dtype f32|f16|bf16]");
  args.option("--model", "llama2.c checkpoint, or a Hugging Face model folder")
      .option("--tokenizer", "llama2.c tokenizer.bin (default: tok<vocab>.bin or tokenizer.bin beside the model)")
      .option("-o", "the GGUF file to write")
      .option("--dtype", "how weights are stored", "f32");
  if (int status = args.parse(argv); status >= 0) return status;
  return run_reporting_errors("convert", [&] {
    if (!args.has("--model") || !args.has("-o")) throw std::invalid_argument("--model and -o are required");
    convert_to_gguf(args.get("--model"), args.get("--tokenizer"), args.get("-o"),
                            parse_gguf_dtype(args.get("--dtype")));
    std::cout << "wrote " << args.get("-o") << "\n";
    return 0;
  });
}

}  // namespace astrai::cli
