#include "cli/speculative_options.h"

#include <stdexcept>
#include <string>

namespace astrai::cli {

void add_speculative_options(Arguments& args) {
  const NgramOptions defaults;
  args.option("--speculative",
              "speculative decoding: off, or ngram (propose the tokens that followed the context's last few tokens "
              "where they occurred before; the output is the same, in fewer steps when the text repeats itself)",
              "off")
      .option("--num-speculative-tokens", "tokens proposed per step at most", std::to_string(defaults.tokens))
      .option("--prompt-lookup-max", "ngram: the longest suffix looked up", std::to_string(defaults.max_match))
      .option("--prompt-lookup-min", "ngram: the shortest suffix looked up", std::to_string(defaults.min_match))
      .option("--draft-model",
              "speculative decoding with a draft model sharing the target's vocabulary (a GGUF file, a Hugging Face "
              "folder or a llama2.c checkpoint): its greedy guesses, on the same backend; the output is the same")
      .option("--draft-tokenizer", "the draft model's llama2.c tokenizer.bin (default: its own, as for --tokenizer)");
}

SpeculativeChoice read_speculative_options(const Arguments& args) {
  const std::string method = args.get("--speculative");
  auto small_int = [&](const char* name) {
    const long long n = args.get_int(name);
    if (n < 1 || n > 64)
      throw std::invalid_argument(std::string(name) + " must be from 1 to 64, got " + std::to_string(n));
    return int(n);
  };
  if (method != "off" && method != "ngram")
    throw std::invalid_argument("--speculative must be off or ngram, got '" + method + "'");
  SpeculativeChoice choice;
  choice.tokens = small_int("--num-speculative-tokens");
  if (args.has("--draft-tokenizer") && !args.has("--draft-model"))
    throw std::invalid_argument("--draft-tokenizer needs --draft-model");
  if (args.has("--draft-model")) {
    if (method != "off") throw std::invalid_argument("--draft-model and --speculative " + method + " exclude each other");
    choice.draft_model = args.get("--draft-model");
    if (choice.draft_model.empty()) throw std::invalid_argument("--draft-model needs a path");
    if (args.has("--draft-tokenizer")) choice.draft_tokenizer = args.get("--draft-tokenizer");
    return choice;
  }
  if (method == "off") return choice;
  NgramOptions options;
  options.tokens = choice.tokens;
  options.max_match = small_int("--prompt-lookup-max");
  options.min_match = small_int("--prompt-lookup-min");
  if (options.max_match < options.min_match)
    throw std::invalid_argument("--prompt-lookup-max must be at least --prompt-lookup-min");
  choice.ngram = ngram_speculation(options);
  return choice;
}

std::optional<OpenedModel> open_draft_model(const SpeculativeChoice& choice) {
  if (choice.draft_model.empty()) return std::nullopt;
  return open_model(choice.draft_model, choice.draft_tokenizer);
}

void check_draft_vocabulary(const Tokenizer& target, int target_vocab, const OpenedModel& draft) {
  const std::string what = "--draft-model " + draft.name + ": ";
  if (draft.weights.config.vocab_size != target_vocab)
    throw std::invalid_argument(what + "its vocabulary has " + std::to_string(draft.weights.config.vocab_size) +
                                " ids, the target's " + std::to_string(target_vocab));
  if (draft.tokenizer.vocab_size() != target.vocab_size())
    throw std::invalid_argument(what + "its tokenizer has " + std::to_string(draft.tokenizer.vocab_size()) +
                                " tokens, the target's " + std::to_string(target.vocab_size()));
  for (int id = 0; id < target.vocab_size(); ++id) {
    const std::span<const int> one(&id, 1);
    if (draft.tokenizer.decode(one) != target.decode(one))
      throw std::invalid_argument(what + "token " + std::to_string(id) + " is '" + draft.tokenizer.decode(one) +
                                  "' there and '" + target.decode(one) + "' in the target's vocabulary");
  }
}

}  // namespace astrai::cli
