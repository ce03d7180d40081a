// astrai chat-template: renders a model's own chat template (Jinja) for each
// request on standard input, one JSON string per line out (the prompt). The
// template comes from a tokenizer_config.json or a model file's
// tokenizer.chat_template. Two kinds of input line:
//   (default)  {"messages": [...], "add_generation_prompt": true,
//              "continue_final_message": false, other keys = template
//              variables}, rendered as Hugging Face's apply_chat_template would;
//   --api openai | anthropic: a request body in that API's shape (as the
//              official SDKs send it: null contents, arguments as JSON text,
//              tool_result blocks), read by the protocol's reader and
//              rendered as `astrai serve` renders it for the model
//              (engine/chat_planning/chat_plan.h's render_chat).
// A bad line (invalid JSON, a request the protocol refuses, or a template
// error such as raise_exception) stops with the line number and the reason
// on stderr and exit status 1.
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/arguments.h"
#include "cli/commands.h"
#include "engine/chat/hf_chat_template.h"
#include "engine/chat/jinja_chat_template.h"
#include "engine/chat_planning/chat_plan.h"
#include "engine/model_files/load_model.h"
#include "server/protocols/chat_request_parser.h"
#include "server/protocols/protocols.h"

namespace astrai::cli {

namespace {

HfTemplateConfig config_from_model(const std::string& path) {
  const OpenedModel model = open_model(path);  // the weights stay in the file
  if (model.chat_template.empty()) throw std::runtime_error(path + ": the model has no chat template (tokenizer.chat_template)");
  return template_config_for(model.chat_template, model.tokenizer);
}

// The prompt `astrai serve` renders for one request body of `protocol`.
std::string render_api_request(const Protocol& protocol, const JinjaChatTemplate& chat_template, const std::string& body) {
  const auto builder = protocol.make_builder("chat-template", SamplingParams{});
  ParsedChatRequest parsed = parse_chat_request(*builder, body);
  if (!parsed.ok())
    throw std::invalid_argument("the " + protocol.name + " request is refused (" + std::to_string(parsed.status) +
                                "): " + parsed.error_body.dump());
  if (parsed.request->messages.empty()) throw std::invalid_argument("not a chat request (no messages)");
  return prompt_text(render_chat(*parsed.request, chat_template));
}

const Protocol& chat_protocol_named(const std::string& name) {
  for (const Protocol& p : protocols())
    if (p.name == name && p.name != "completions") return p;
  throw std::invalid_argument("--api must be openai or anthropic, got '" + name + "'");
}

}  // namespace

int run_chat_template(std::span<const std::string_view> argv) {
  Arguments args("astrai chat-template (--tokenizer-config FILE | --model M) --jsonl [--api openai|anthropic] < requests.jsonl");
  args.option("--tokenizer-config", "a Hugging Face tokenizer_config.json (its chat_template, bos_token, eos_token)")
      .option("--model", "a GGUF file (its tokenizer.chat_template and BOS/EOS pieces)")
      .flag("--jsonl", "read one JSON request per line, print one JSON string per line (the only mode)")
      .option("--api", "openai | anthropic: each line is a request body in that API's shape, rendered as astrai serve renders it");
  if (int status = args.parse(argv); status >= 0) return status;
  return run_reporting_errors("chat-template", [&] {
    if (!args.has("--jsonl")) throw std::invalid_argument("--jsonl is required (the only input format)");
    if (args.has("--model") == args.has("--tokenizer-config"))
      throw std::invalid_argument("give exactly one of --tokenizer-config and --model");
    const HfTemplateConfig config = args.has("--model") ? config_from_model(args.get("--model"))
                                                        : read_tokenizer_config(args.get("--tokenizer-config"));
    const Protocol* api = args.has("--api") ? &chat_protocol_named(args.get("--api")) : nullptr;
    const HfChatTemplate chat_template(config);
    const JinjaChatTemplate served_template(config);
    size_t line_number = 0;
    for (std::string line; std::getline(std::cin, line);) {
      ++line_number;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      try {
        const std::string prompt = api ? render_api_request(*api, served_template, line)
                                       : chat_template.render_request(nlohmann::ordered_json::parse(line));
        std::cout << nlohmann::json(prompt).dump() << "\n";
      } catch (const std::exception& e) {
        std::cout.flush();
        throw std::runtime_error("input line " + std::to_string(line_number) + ": " + e.what());
      }
    }
    return 0;
  });
}

}  // namespace astrai::cli
