// Chat templates: how a model expects a conversation to be laid out as one
// prompt. A template renders messages into parts: text, plus the special
// tokens (BOS, EOS, named markers such as <|im_start|>) that must become
// their own token ids rather than be spelled out by the tokenizer. Keeping
// them apart from the text means a user who types "<|im_end|>" gets those
// characters, never the control token.
//
// Known templates: plain (base models: the contents joined by newlines),
// llama2 ([INST] ... [/INST]), chatml (<|im_start|>role ... <|im_end|>) and
// llama3 (<|start_header_id|>role<|end_header_id|> ... <|eot_id|>). The prompt
// never starts with BOS: the encoder (prompt_encoder.h) always puts it first,
// as the engine does for plain prompts.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/chat/chat_message.h"

namespace astrai {

struct PromptPart {
  // Rendered: a whole prompt from the model's own (Jinja) template, special
  // tokens and BOS spelled out in the text (jinja_chat_template.h).
  enum class Kind { Text, Bos, Eos, Special, Rendered };
  Kind kind = Kind::Text;
  std::string text;  // the text, or the special token's piece (e.g. "<|im_start|>")
};
using Prompt = std::vector<PromptPart>;

// The prompt as one string, BOS/EOS spelled "<s>"/"</s>" (for tests and logs).
std::string prompt_text(const Prompt& prompt);

// What a request adds to its conversation for the template.
struct ChatOptions {
  // The tools the model may call, as transformers passes them to a template's
  // `tools` variable: [{"type": "function", "function": {"name",
  // "description", "parameters"}}]; null when none.
  nlohmann::ordered_json tools = nullptr;
  // More template variables (a request's chat_template_kwargs, e.g.
  // {"enable_thinking": false} for Qwen 3); null or an object.
  nlohmann::ordered_json variables = nullptr;
};

class ChatTemplate {
 public:
  virtual ~ChatTemplate() = default;
  virtual std::string name() const = 0;
  // The prompt for a conversation. When the last message is the assistant's,
  // its turn is left open so that generation continues it (a "prefill");
  // otherwise the prompt ends by opening the assistant's turn.
  virtual Prompt render(std::span<const ChatMessage> messages) const = 0;
  // The same with the request's tools and variables. The built-in templates
  // ignore the variables and throw std::invalid_argument for tools, tool
  // calls or tool results (they have no markup for them).
  virtual Prompt render(std::span<const ChatMessage> messages, const ChatOptions& options) const;
  // The model's own template text (Jinja), "" for the built-in ones: what
  // the output parsers are chosen by (tool_call_family.h).
  virtual std::string source() const { return ""; }
};

// "plain", "llama2", "chatml", "llama3".
const std::vector<std::string>& chat_template_names();

// Throws std::invalid_argument listing the known names when `name` is unknown.
std::unique_ptr<ChatTemplate> make_chat_template(std::string_view name);

// The known template a GGUF's tokenizer.chat_template (Jinja text) implements,
// recognised by its distinctive markers, or "plain" when none matches (an
// empty text is a base model).
std::string detect_chat_template(std::string_view template_text);

}  // namespace astrai
