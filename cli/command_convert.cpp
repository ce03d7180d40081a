// astrai convert: a llama2.c checkpoint and its tokenizer, or a Hugging Face
// folder, to one GGUF file in llama.cpp's conventions (load_model.h).
#include <iostream>

#include "cli/arguments.h"
#include "cli/commands.h"
#include "engine/model_files/load_model.h"

namespace astrai::cli {

int run_convert(std::span<const std::string_view> argv) {
  Arguments args("astrai convert --model (M.bin | DIR) [--tokenizer T.bin] -o OUT.gguf [--dtype f32|f16|bf16] [--type q8_0|q4_0|q4_k|q6_k]");
  args.option("--model", "llama2.c checkpoint, or a Hugging Face model folder")
      .option("--tokenizer", "llama2.c tokenizer.bin (default: tok<vocab>.bin or tokenizer.bin beside the model)")
      .option("-o", "the GGUF file to write")
      .option("--dtype", "how weights are stored", "f32")
      .option("--type", "q8_0, q4_0, q4_k or q6_k: quantize the matrices as llama.cpp does (docs/model-files.md)");
  if (int status = args.parse(argv); status >= 0) return status;
  return run_reporting_errors("convert", [&] {
    if (!args.has("--model") || !args.has("-o")) throw std::invalid_argument("--model and -o are required");
    if (args.has("--type") && args.get("--dtype") != "f32")
      throw std::invalid_argument("give --dtype or --type, not both");
    const std::string type = args.has("--type") ? args.get("--type") : args.get("--dtype");
    convert_to_gguf(args.get("--model"), args.get("--tokenizer"), args.get("-o"), parse_gguf_dtype(type));
    std::cout << "wrote " << args.get("-o") << "\n";
    return 0;
  });
}

}  // namespace astrai::cli
