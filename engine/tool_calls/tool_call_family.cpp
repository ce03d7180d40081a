#include "engine/tool_calls/tool_call_family.h"

namespace astrai {

const char* to_string(ToolCallFamily family) {
  switch (family) {
    case ToolCallFamily::None: return "none";
    case ToolCallFamily::Hermes: return "hermes";
    case ToolCallFamily::Llama3: return "llama3";
    case ToolCallFamily::Mistral: return "mistral";
  }
  return "none";
}

const std::vector<std::string>& tool_call_family_names() {
  static const std::vector<std::string> names = {"none", "hermes", "llama3", "mistral"};
  return names;
}

std::optional<ToolCallFamily> tool_call_family_named(std::string_view name) {
  for (ToolCallFamily f : {ToolCallFamily::None, ToolCallFamily::Hermes, ToolCallFamily::Llama3, ToolCallFamily::Mistral})
    if (name == to_string(f)) return f;
  return std::nullopt;
}

ToolCallFamily detect_tool_call_family(std::string_view t) {
  auto has = [&](std::string_view s) { return t.find(s) != std::string_view::npos; };
  if (has("<tool_call>")) return ToolCallFamily::Hermes;
  if (has("[TOOL_CALLS]")) return ToolCallFamily::Mistral;
  // Llama 3.1-3.3 ask for {"name": function name, "parameters": dictionary of
  // argument name and its value}; Llama 3 (no tools) has the headers only.
  if (has("<|start_header_id|>") && has("tools") && has("parameters")) return ToolCallFamily::Llama3;
  return ToolCallFamily::None;
}

bool template_has_reasoning(std::string_view chat_template) {
  return chat_template.find("<think>") != std::string_view::npos &&
         chat_template.find("</think>") != std::string_view::npos;
}

}  // namespace astrai
