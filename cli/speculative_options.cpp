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
      .option("--prompt-lookup-min", "ngram: the shortest suffix looked up", std::to_string(defaults.min_match));
}

SpeculationConfig read_speculative_options(const Arguments& args) {
  const std::string method = args.get("--speculative");
  auto small_int = [&](const char* name) {
    const long long n = args.get_int(name);
    if (n < 1 || n > 64)
      throw std::invalid_argument(std::string(name) + " must be from 1 to 64, got " + std::to_string(n));
    return int(n);
  };
  if (method == "off") return {};
  if (method != "ngram") throw std::invalid_argument("--speculative must be off or ngram, got '" + method + "'");
  NgramOptions options;
  options.tokens = small_int("--num-speculative-tokens");
  options.max_match = small_int("--prompt-lookup-max");
  options.min_match = small_int("--prompt-lookup-min");
  if (options.max_match < options.min_match)
    throw std::invalid_argument("--prompt-lookup-max must be at least --prompt-lookup-min");
  return ngram_speculation(options);
}

}  // namespace astrai::cli
