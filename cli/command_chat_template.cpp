// astrai chat-template: renders a model's own chat template (Jinja) for each
// request on standard input, as Hugging Face's apply_chat_template would:
// one JSON object per line ({"messages": [...], "add_generation_prompt": true,
// "continue_final_message": false, other keys = template variables}), one JSON string per line out (the
// prompt). The template comes from a tokenizer_config.json or a model file's
// tokenizer.chat_template. A bad line (invalid JSON, or a template error such
// as raise_exception) stops with the line number and the reason on stderr and
// exit status 1.
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/arguments.h"
#include "cli/commands.h"
#include "engine/chat/hf_chat_template.h"
#include "engine/model_files/load_model.h"

namespace astrai::cli {

namespace {

HfTemplateConfig config_from_model(const std::string& path) {
  const OpenedModel model = open_model(path);  // the weights stay in the file
  if (model.chat_template.empty()) throw std::runtime_error(path + ": the model has no chat template (tokenizer.chat_template)");
  return template_config_for(model.chat_template, model.tokenizer);
}

}  // namespace

int run_chat_template(std::span<const std::string_view> argv) {
  Arguments args("astrai chat-template (--tokenizer-config FILE | --model M) --jsonl < requests.jsonl");
  args.option("--tokenizer-config", "a Hugging Face tokenizer_config.json (its chat_template, bos_token, eos_token)")
      .option("--model", "a GGUF file (its tokenizer.chat_template and BOS/EOS pieces)")
      .flag("--jsonl", "read one JSON request per line, print one JSON string per line (the only mode)");
  if (int status = args.parse(argv); status >= 0) return status;
  return run_reporting_errors("chat-template", [&] {
    if (!args.has("--jsonl")) throw std::invalid_argument("--jsonl is required (the only input format)");
    if (args.has("--model") == args.has("--tokenizer-config"))
      throw std::invalid_argument("give exactly one of --tokenizer-config and --model");
    const HfChatTemplate chat_template(args.has("--model") ? config_from_model(args.get("--model"))
                                                           : read_tokenizer_config(args.get("--tokenizer-config")));
    size_t line_number = 0;
    for (std::string line; std::getline(std::cin, line);) {
      ++line_number;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      try {
        const auto request = nlohmann::ordered_json::parse(line);
        std::cout << nlohmann::json(chat_template.render_request(request)).dump() << "\n";
      } catch (const std::exception& e) {
        std::cout.flush();
        throw std::runtime_error("input line " + std::to_string(line_number) + ": " + e.what());
      }
    }
    return 0;
  });
}

}  // namespace astrai::cli
