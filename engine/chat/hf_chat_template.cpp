// tokenizer_config.json -> HfChatTemplate, and the context transformers
// renders chat templates with (see hf_chat_template.h).
#include "engine/chat/hf_chat_template.h"

#include <optional>
#include <stdexcept>

#include "engine/jinja/python_text.h"
#include "engine/text/read_file.h"
#include "engine/tokenizer/special_tokens.h"

namespace astrai {

namespace {

nlohmann::ordered_json read_config_json(const std::string& path) {
  const std::string text = read_whole_file(path, path);
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path + ": invalid JSON: " + e.what());
  }
}

}  // namespace

nlohmann::ordered_json template_message(const ChatMessage& m) {
  nlohmann::ordered_json out = {{"role", to_string(m.role)}};
  out["content"] = m.content;
  if (!m.reasoning.empty()) {
    out["reasoning_content"] = m.reasoning;
    out["thinking"] = m.reasoning;
  }
  if (!m.tool_calls.is_null()) out["tool_calls"] = m.tool_calls;
  if (!m.tool_call_id.empty()) out["tool_call_id"] = m.tool_call_id;
  if (!m.name.empty()) out["name"] = m.name;
  return out;
}

HfTemplateConfig parse_tokenizer_config(const nlohmann::ordered_json& config, const std::string& source) {
  if (!config.is_object()) throw std::runtime_error(source + ": not a JSON object");
  HfTemplateConfig out;
  if (!config.contains("chat_template") || config["chat_template"].is_null())
    throw std::runtime_error(source + ": no chat_template");
  const auto& t = config["chat_template"];
  if (t.is_string()) {
    out.chat_template = t.get<std::string>();
  } else if (t.is_array()) {
    bool found = false;
    for (const auto& entry : t) {
      if (!entry.is_object() || !entry.contains("name") || !entry.contains("template") || !entry["name"].is_string() ||
          !entry["template"].is_string())
        throw std::runtime_error(source + ": chat_template list entries must be {\"name\": str, \"template\": str}");
      if (entry["name"] == "default") {
        out.chat_template = entry["template"].get<std::string>();
        found = true;
      }
    }
    if (!found) throw std::runtime_error(source + ": chat_template list has no \"default\" template");
  } else {
    throw std::runtime_error(source + ": chat_template must be a string or a list of named templates");
  }
  out.bos_token = special_token_text(config, "bos_token", source);
  out.eos_token = special_token_text(config, "eos_token", source);
  out.unk_token = special_token_text(config, "unk_token", source);
  out.pad_token = special_token_text(config, "pad_token", source);
  return out;
}

HfTemplateConfig read_tokenizer_config(const std::string& path) {
  return parse_tokenizer_config(read_config_json(path), path);
}

std::string read_chat_template(const std::string& path) {
  const nlohmann::ordered_json config = read_config_json(path);
  if (config.is_object() && (!config.contains("chat_template") || config["chat_template"].is_null())) return "";
  return parse_tokenizer_config(config, path).chat_template;
}

HfChatTemplate::HfChatTemplate(HfTemplateConfig config)
    : config_(std::move(config)), template_(config_.chat_template) {}

HfTemplateConfig template_config_for(std::string chat_template, const Tokenizer& tokenizer) {
  HfTemplateConfig config;
  config.chat_template = std::move(chat_template);
  if (tokenizer.bos_id() >= 0) config.bos_token = tokenizer.piece(tokenizer.bos_id());
  config.eos_token = tokenizer.piece(tokenizer.eos_id());
  return config;
}

std::string HfChatTemplate::render(std::span<const ChatMessage> messages, bool add_generation_prompt,
                                   const nlohmann::ordered_json& extra) const {
  nlohmann::ordered_json request = extra.is_null() ? nlohmann::ordered_json::object() : extra;
  if (!request.is_object()) throw std::invalid_argument("chat template variables must be a JSON object");
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const ChatMessage& m : messages) list.push_back(template_message(m));
  request["messages"] = std::move(list);
  request["add_generation_prompt"] = add_generation_prompt;
  return render_request(request);
}

std::string HfChatTemplate::render_request(const nlohmann::ordered_json& request) const {
  if (!request.is_object()) throw std::invalid_argument("a chat-template request must be a JSON object");
  if (!request.contains("messages") || !request["messages"].is_array())
    throw std::invalid_argument("a chat-template request needs \"messages\": a list");
  if (request.contains("add_generation_prompt") && !request["add_generation_prompt"].is_boolean())
    throw std::invalid_argument("\"add_generation_prompt\" must be true or false");
  // transformers: template.render(messages=..., tools=..., documents=...,
  // add_generation_prompt=..., **special_tokens_map, **kwargs).
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  if (config_.bos_token) context["bos_token"] = *config_.bos_token;
  if (config_.eos_token) context["eos_token"] = *config_.eos_token;
  if (config_.unk_token) context["unk_token"] = *config_.unk_token;
  if (config_.pad_token) context["pad_token"] = *config_.pad_token;
  for (const auto& [k, v] : request.items()) context[k] = v;
  for (const char* key : {"tools", "documents"})
    if (!context.contains(key)) context[key] = nullptr;
  if (!context.contains("add_generation_prompt")) context["add_generation_prompt"] = false;
  // continue_final_message is apply_chat_template's, not the template's.
  bool continue_final = false;
  if (context.contains("continue_final_message")) {
    if (!context["continue_final_message"].is_boolean())
      throw std::invalid_argument("\"continue_final_message\" must be true or false");
    continue_final = context["continue_final_message"].get<bool>();
    context.erase("continue_final_message");
  }
  if (!continue_final) return template_.render(context);
  if (context["add_generation_prompt"].get<bool>())
    throw std::invalid_argument("continue_final_message and add_generation_prompt are not compatible");
  const auto& messages = request["messages"];
  if (messages.empty() || !messages.back().is_object() || !messages.back().contains("content"))
    throw std::invalid_argument("continue_final_message needs a final message with a content");
  // A list of content blocks: the last one with a text (transformers).
  const auto& content = messages.back()["content"];
  const nlohmann::ordered_json* text = &content;
  if (content.is_array()) {
    text = nullptr;
    for (auto it = content.rbegin(); it != content.rend() && !text; ++it)
      if (it->is_object() && it->contains("text")) text = &(*it)["text"];
  }
  if (!text || !text->is_string())
    throw std::invalid_argument("continue_final_message needs the final message's text (a string)");
  return continue_final_message(template_.render(context), text->get<std::string>());
}

std::string continue_final_message(std::string rendered, std::string_view final_message) {
  // Python's str.strip() / lstrip() (the Jinja engine's, on code points).
  const std::string stripped = jinja::py_strip(final_message, std::nullopt, true, true);
  const size_t at = rendered.rfind(stripped);
  if (at == std::string::npos)
    throw std::invalid_argument("the chat template's prompt does not contain the final assistant message to continue");
  // transformers: rendered[at : at + len(message.lstrip())] == message, the
  // message itself (leading spaces and all): true only when it has none.
  const size_t kept = jinja::py_strip(final_message, std::nullopt, true, false).size();
  const bool spacing_kept = std::string_view(rendered).substr(at, kept) == final_message;
  rendered.resize(at + (spacing_kept ? kept : stripped.size()));
  return rendered;
}

}  // namespace astrai
