// astrai generate: continue a prompt. It runs one request through the
// engine on the chosen backend (the CPU reference unless CUDA is built and a
// GPU is present), which gives exactly what the sequential reference loop
// (reference/generate.h) gives: tests/golden checks both against llama2.c.
#include <iostream>

#include "cli/arguments.h"
#include "cli/backend.h"
#include "cli/commands.h"
#include "cli/speculative_options.h"
#include "cli/tensor_parallel_args.h"
#include "engine/request_defaults.h"
#include "engine/model_files/load_model.h"

namespace astrai::cli {

int run_generate(std::span<const std::string_view> argv) {
  Arguments args("astrai generate --model M [--tokenizer T] --prompt TEXT [options]");
  const SamplingParams defaults;  // the engine's own (reference/sampling/sampling_params.h)
  args.option("--model", "a GGUF file or a llama2.c checkpoint")
      .option("--tokenizer", "llama2.c tokenizer.bin (default: the GGUF's own, or tok<vocab>.bin beside a checkpoint)")
      .option("--prompt", "the text to continue", "")
      .option("--max-tokens", "new tokens to generate at most", std::to_string(kDefaultMaxTokens))
      .option("--temperature", "0 = greedy (argmax)", number_text(defaults.temperature))
      .option("--top-k", "keep the k most likely tokens (0 = all)", std::to_string(defaults.top_k))
      .option("--top-p", "keep the smallest set of tokens whose probability reaches p", number_text(defaults.top_p))
      .option("--seed", "seed of the sampler (default: drawn at random)")
      .option("--backend", "auto (CUDA when built and a GPU is present), reference, or cuda", "auto")
      .option("--cuda-dtype", "the CUDA backend's weights and cache: bf16, or f32 (exact comparisons)", "bf16")
      .flag("--print-ids", "after the text, print one line with the generated token ids");
  add_speculative_options(args);
  add_tensor_parallel_options(args);
  if (int status = args.parse(argv); status >= 0) return status;
  return run_reporting_errors("generate", [&] {
    if (!args.has("--model")) throw std::invalid_argument("--model is required");
    // Options first: a typo is reported before a model is loaded.
    GenerationRequest request;
    request.prompt = args.get("--prompt");
    request.max_tokens = int(args.get_int("--max-tokens"));
    request.sampling.temperature = float(args.get_double("--temperature"));
    request.sampling.top_k = int(args.get_int("--top-k"));
    request.sampling.top_p = float(args.get_double("--top-p"));
    if (args.has("--seed")) request.sampling.seed = uint64_t(args.get_int("--seed"));
    request.sampling.validate();
    const SpeculativeChoice speculation = read_speculative_options(args);
    const TensorParallelOptions tp = tensor_parallel_options(args, args.get("--model"), args.get("--tokenizer"));
    if (const auto status = run_rank_unless_first(tp, args.get("--model"), args.get("--tokenizer"))) return *status;

    OpenedModel model = open_model(args.get("--model"), args.get("--tokenizer"));
    std::optional<OpenedModel> draft = open_draft_model(speculation);
    if (draft) check_draft_vocabulary(model.tokenizer, model.weights.config.vocab_size, *draft);
    const std::string shape = model.weights.config.describe();
    EngineConfig config;
    config.scheduler.max_running_tasks = 1;  // one request: one cache slot
    config.scheduler.speculation = speculation.ngram;
    std::string backend;
    // Read from the file by the backend: the host never holds the weights twice.
    const auto engine = make_engine(model.weights, std::make_shared<const Tokenizer>(std::move(model.tokenizer)),
                                    config, args.get("--backend"), &backend, args.get("--cuda-dtype"), tp,
                                    {draft ? &draft->weights : nullptr, speculation.tokens});
    model.weights = ModelSource{};  // closes the file
    draft.reset();
    std::cerr << "astrai generate: " << model.name << " (" << shape << ") on " << backend << "\n";

    // Pieces arrive as the engine streams them: never half a UTF-8 character.
    const auto result = engine->generate_with_request(std::move(request));
    while (const auto piece = result->next_piece()) std::cout << *piece << std::flush;
    const TaskOutput out = result->wait();
    std::cout << "\n";
    if (out.reason == FinishReason::Error) throw std::runtime_error(out.error);
    if (speculation.enabled()) {
      const SchedulerStats stats = engine->wait_until_idle();  // published after the last step
      std::cerr << "astrai generate: " << engine->speculation_method() << " speculation kept " << stats.spec_accepted_tokens
                << " of " << stats.spec_draft_tokens << " proposed tokens (" << stats.spec_drafts << " drafts); "
                << out.tokens.size() << " tokens in " << stats.steps << " steps\n";
    }
    if (args.has("--print-ids")) {
      for (size_t i = 0; i < out.tokens.size(); ++i) std::cout << (i ? " " : "") << out.tokens[i];
      std::cout << "\n";
    }
    return 0;
  });
}

}  // namespace astrai::cli
