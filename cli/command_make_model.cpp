// astrai make-model: a synthetic model of any Llama shape with seeded random
// weights and a made-up vocabulary, written as GGUF, for tests and benchmarks.
#include <iostream>

#include "cli/arguments.h"
#include "cli/commands.h"
#include "engine/model_files/load_model.h"
#include "reference/synthetic_model.h"

namespace astrai::cli {

int run_make_model(std::span<const std::string_view> argv) {
  std::string presets;
  for (const auto& p : model_presets()) presets += "\n        " + p.name + ": " + p.description;
  Arguments args("astrai make-model -o OUT.gguf [--preset NAME] [--dim N --layers N ...]");
  args.option("-o", "the GGUF file to write")
      .option("--preset", "a named shape; the options below override its fields:" + presets, "tiny")
      .option("--dim", "residual width")
      .option("--hidden", "feed-forward width")
      .option("--layers", "number of layers")
      .option("--heads", "query heads")
      .option("--kv-heads", "key/value heads")
      .option("--vocab", "vocabulary size (at least 259: specials and byte pieces)")
      .option("--context", "context length")
      .option("--rope-theta", "RoPE base")
      .option("--seed", "seed of the weights", "1")
      .option("--dtype", "how weights are stored: f32, f16, bf16", "f32")
      .option("--name", "general.name in the file", "synthetic");
  if (int status = args.parse(argv); status >= 0) return status;
  return run_reporting_errors("make-model", [&] {
    if (!args.has("-o")) throw std::invalid_argument("-o is required");
    ModelConfig config = preset_config(args.get("--preset"));
    auto override_int = [&](const char* option, int& field) {
      if (args.has(option)) field = int(args.get_int(option));
    };
    override_int("--dim", config.dim);
    override_int("--hidden", config.hidden_dim);
    override_int("--layers", config.n_layers);
    override_int("--heads", config.n_heads);
    override_int("--kv-heads", config.n_kv_heads);
    override_int("--vocab", config.vocab_size);
    override_int("--context", config.max_seq_len);
    if (args.has("--rope-theta")) config.rope_theta = float(args.get_double("--rope-theta"));
    config.validate();
    const ModelWeights weights = make_synthetic_weights(config, uint64_t(args.get_int("--seed")));
    write_gguf_model(args.get("-o"), weights, make_synthetic_tokenizer(config.vocab_size),
                     parse_gguf_dtype(args.get("--dtype")), args.get("--name"));
    std::cout << "wrote " << args.get("-o") << " (" << config.describe() << ")\n";
    return 0;
  });
}

}  // namespace astrai::cli
