// astrai generate: continue a prompt with the sequential reference loop
// (reference/generate.h), the oracle every other path is compared with.
#include <iostream>

#include "cli/arguments.h"
#include "cli/commands.h"
#include "engine/model_files/load_model.h"
#include "engine/text/text_stream.h"
#include "reference/generate.h"
#include "reference/sampling/sampler_state.h"

namespace astrai::cli {

int run_generate(std::span<const std::string_view> argv) {
  Arguments args("astrai generate --model M [--tokenizer T] --prompt TEXT [options]");
  args.option("--model", "a GGUF file or a llama2.c checkpoint")
      .option("--tokenizer", "llama2.c tokenizer.bin (default: the GGUF's own, or tok<vocab>.bin beside a checkpoint)")
      .option("--prompt", "the text to continue", "")
      .option("--max-tokens", "new tokens to generate at most", "256")
      .option("--temperature", "0 = greedy (argmax)", "1.0")
      .option("--top-k", "keep the k most likely tokens (0 = all)", "50")
      .option("--top-p", "keep the smallest set of tokens whose probability reaches p", "1.0")
      .option("--seed", "seed of the sampler (default: drawn at random)")
      .flag("--print-ids", "after the text, print one line with the generated token ids");
  if (int status = args.parse(argv); status >= 0) return status;
  return run_reporting_errors("generate", [&] {
    if (!args.has("--model")) throw std::invalid_argument("--model is required");
    // Options first: a typo is reported before a model is loaded.
    SamplingParams params;
    params.temperature = float(args.get_double("--temperature"));
    params.top_k = int(args.get_int("--top-k"));
    params.top_p = float(args.get_double("--top-p"));
    if (args.has("--seed")) params.seed = uint64_t(args.get_int("--seed"));
    SamplerState sampler(params);
    GenerateOptions options;
    options.max_new_tokens = int(args.get_int("--max-tokens"));

    const LoadedModel model = load_model(args.get("--model"), args.get("--tokenizer"));
    const std::vector<int> prompt = model.tokenizer.encode(args.get("--prompt"), true);
    // llama2.c models end a story by starting the next one with BOS.
    options.stop_tokens = {model.tokenizer.eos_id(), model.tokenizer.bos_id()};
    // Text is printed as the engine streams it: never half a UTF-8
    // character, invalid bytes (a model may emit any) as U+FFFD.
    TextStream text;
    int previous = prompt.back();
    const auto ids = generate(model.weights, prompt, options, [&](std::span<const float> logits) {
      const int token = sampler.next(logits);
      std::cout << text.push(model.tokenizer.decode_token(previous, token)) << std::flush;
      previous = token;
      return token;
    });
    std::cout << text.finish() << "\n";
    if (args.has("--print-ids")) {
      for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
      std::cout << "\n";
    }
    return 0;
  });
}

}  // namespace astrai::cli
