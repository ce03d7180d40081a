// The formats in which chat models write tool calls, each family's own:
//   hermes   Qwen 2.5 / 3, Hermes 2 Pro / 3, QwQ: <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>,
//            one block per call, text around them is content;
//   llama3   Llama 3.1 / 3.2 / 3.3 (JSON tool calling): the whole output is one or more
//            {"name": ..., "parameters": {...}} objects separated by ";" (an optional
//            <|python_tag|> first), or it is all content;
//   mistral  Mistral 7B v0.3, Nemo, Small: content, then [TOOL_CALLS] and a JSON list
//            [{"name": ..., "arguments": {...}}, ...] to the end. [TOOL_CALLS] is a control
//            token that the engine's decoder does not spell out, so an output whose first
//            non-space byte is "[" is read as the list too.
// The family is recognised in the model's chat template (the markers its tool
// instructions use), or forced with `astrai serve --tool-call-parser`.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace astrai {

enum class ToolCallFamily { None, Hermes, Llama3, Mistral };

// "none", "hermes", "llama3", "mistral".
const char* to_string(ToolCallFamily family);
// The family a name spells; nullopt for an unknown name.
std::optional<ToolCallFamily> tool_call_family_named(std::string_view name);
const std::vector<std::string>& tool_call_family_names();

// The family whose markers the chat template text uses: <tool_call> (hermes),
// [TOOL_CALLS] (mistral), or Llama 3's header tokens with a `tools` variable
// and "parameters" in its instructions (llama3); None otherwise (the template
// cannot show tools, or shows them in a format this server does not parse).
ToolCallFamily detect_tool_call_family(std::string_view chat_template);

// Whether a chat template writes reasoning between <think> and </think>
// (Qwen 3, QwQ, DeepSeek-R1): the reasoning is then split out of outputs.
bool template_has_reasoning(std::string_view chat_template);

}  // namespace astrai
