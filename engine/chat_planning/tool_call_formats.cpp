#include "engine/chat_planning/tool_call_formats.h"

#include <algorithm>

#include "engine/chat_planning/request_id.h"

namespace astrai {

namespace {

// The rows. A syntax spells a call as its family's templates show one
// (docs/tool-calling.md); the parsers read more spellings than the grammar
// writes (any whitespace, "parameters" or "arguments").
std::vector<ToolCallFormat> make_rows() {
  constexpr std::string_view kHermesOpen = "<tool_call>", kHermesClose = "</tool_call>";
  constexpr std::string_view kPythonTag = "<|python_tag|>";
  constexpr std::string_view kMistralMarker = "[TOOL_CALLS]";
  constexpr std::string_view kHarmonyCall = "<|channel|>commentary to=functions.";
  const std::string hermes_open(kHermesOpen), hermes_close(kHermesClose);
  return {
      {ToolCallFamily::Hermes, "hermes", {kHermesOpen}, kHermesOpen, kHermesClose,
       {"", hermes_open + "\n{\"name\": ", ", \"arguments\": ", "}\n" + hermes_close, "\n", "", hermes_open}, 0},
      {ToolCallFamily::Mistral, "mistral", {kMistralMarker}, kMistralMarker, "",
       {"[", "{\"name\": ", ", \"arguments\": ", "}", ", ", "]", ""}, 9},
      // Llama 3.1-3.3 ask for {"name": function name, "parameters":
      // dictionary of argument name and its value}; Llama 3 (no tools) has
      // the headers only.
      {ToolCallFamily::Llama3, "llama3", {"<|start_header_id|>", "tools", "parameters"}, kPythonTag, "",
       {"", "{\"name\": ", ", \"parameters\": ", "}", "; ", "", ""}, 0},
      // gpt-oss's template renders its tools as a namespace "functions" and
      // past calls as "to=functions.NAME"; the calls the grammar writes put
      // the recipient in the channel's header, as the model card's examples.
      {ToolCallFamily::Harmony, "harmony", {"<|channel|>", "to=", "functions."}, kHarmonyCall, "",
       {"", std::string(kHarmonyCall), " <|constrain|>json<|message|>", "", "", "", std::string(kHarmonyCall), true},
       0, true},
  };
}

}  // namespace

const std::vector<ToolCallFormat>& tool_call_formats() {
  static const std::vector<ToolCallFormat> rows = make_rows();
  return rows;
}

const ToolCallFormat* tool_call_format(ToolCallFamily family) {
  for (const ToolCallFormat& row : tool_call_formats())
    if (row.family == family) return &row;
  return nullptr;
}

const char* to_string(ToolCallFamily family) {
  const ToolCallFormat* row = tool_call_format(family);
  return row ? row->name.data() : "none";  // the names are literals: NUL-terminated
}

const std::vector<std::string>& tool_call_family_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all = {"none"};
    for (const ToolCallFormat& row : tool_call_formats()) all.emplace_back(row.name);
    return all;
  }();
  return names;
}

std::optional<ToolCallFamily> tool_call_family_named(std::string_view name) {
  if (name == "none") return ToolCallFamily::None;
  for (const ToolCallFormat& row : tool_call_formats())
    if (row.name == name) return row.family;
  return std::nullopt;
}

ToolCallFamily detect_tool_call_family(std::string_view chat_template) {
  for (const ToolCallFormat& row : tool_call_formats())
    if (std::all_of(row.template_markers.begin(), row.template_markers.end(),
                    [&](std::string_view m) { return chat_template.find(m) != std::string_view::npos; }))
      return row.family;
  return ToolCallFamily::None;
}

std::string new_tool_call_id(ToolCallFamily family, std::string_view protocol_prefix) {
  const ToolCallFormat* row = tool_call_format(family);
  if (row && row->id_length > 0) return random_id("", row->id_length);
  return random_id(std::string(protocol_prefix));
}

}  // namespace astrai
