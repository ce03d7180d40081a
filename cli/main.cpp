// astrai: the command-line entry point. It only dispatches to a subcommand.
#include <iostream>
#include <string_view>
#include <vector>

#include "cli/commands.h"

namespace {

constexpr const char* kUsage =
    "usage: astrai <command> [options]\n"
    "\n"
    "commands:\n"
    "  serve        serve the engine over HTTP (OpenAI and Anthropic APIs)\n"
    "  generate     continue a prompt\n"
    "  tokenize     print the token ids of each line of standard input\n"
    "  chat-template  render a model's own chat template (Jinja) for JSON requests\n"
    "  convert      convert a llama2.c checkpoint and tokenizer to GGUF\n"
    "  make-model   write a synthetic model with seeded random weights as GGUF\n"
    "  rank-worker  one tensor-parallel rank (serve and generate start them)\n"
    "\n"
    "`astrai <command> --help` describes a command's options.\n";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string_view command = args[0];
  const std::span<const std::string_view> rest(args.data() + 1, args.size() - 1);
  if (command == "serve") return astrai::cli::run_serve(rest);
  if (command == "generate") return astrai::cli::run_generate(rest);
  if (command == "tokenize") return astrai::cli::run_tokenize(rest);
  if (command == "chat-template") return astrai::cli::run_chat_template(rest);
  if (command == "convert") return astrai::cli::run_convert(rest);
  if (command == "make-model") return astrai::cli::run_make_model(rest);
  if (command == "rank-worker") return astrai::cli::run_rank_worker(rest);
  std::cerr << "astrai: unknown command '" << command << "'\n\n" << kUsage;
  return 2;
}
