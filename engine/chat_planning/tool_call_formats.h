// The formats in which chat models write tool calls, one row per family:
// everything the server does differently for a family is in its row, and no
// other file spells a family's markers or syntax.
//   hermes   Qwen 2.5 / 3, Hermes 2 Pro / 3, QwQ: <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>,
//            one block per call, text around them is content;
//   llama3   Llama 3.1 / 3.2 / 3.3 (JSON tool calling): the whole output is one or more
//            {"name": ..., "parameters": {...}} objects separated by ";" (an optional
//            <|python_tag|> first), or it is all content;
//   mistral  Mistral 7B v0.3, Nemo, Small: content, then [TOOL_CALLS] and a JSON list
//            [{"name": ..., "arguments": {...}}, ...] to the end. [TOOL_CALLS] is a control
//            token that the engine's decoder does not spell out, so an output whose first
//            non-space byte is "[" is read as the list too;
//   harmony  gpt-oss: a message to the recipient functions.NAME whose body is the arguments,
//            <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{...}, after the
//            optional analysis message; <|call|> ends the turn, so one call per output. Its
//            calls are read with its reasoning by engine/chat_planning/harmony_output.h.
// A row holds: the name (`astrai serve --tool-call-parser`), how the family is
// recognised in a chat template, the syntax the grammar enforces
// (grammar::ToolCallSyntax), the markers and the parser that read calls back
// out of the text (tool_call_parser.h), and the rule for the ids of the calls
// the server returns. Adding a family is one row here and, when its calls
// read differently from these three, a parser beside them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/grammar/token_constraint.h"

namespace astrai {

enum class ToolCallFamily { None, Hermes, Llama3, Mistral, Harmony };

struct ToolCallFormat {
  ToolCallFamily family = ToolCallFamily::None;
  std::string_view name;  // "hermes"
  // The family's chat templates show tools with every one of these strings.
  std::vector<std::string_view> template_markers;
  // What announces calls in an output: hermes' block opener, llama3's
  // optional <|python_tag|>, mistral's [TOOL_CALLS]; and hermes' block closer.
  std::string_view call_marker, call_end_marker;
  // How the grammar writes calls (tool_choice required, named, auto).
  grammar::ToolCallSyntax syntax;
  // Ids of the calls a response returns: 0, the protocol's own (call_…,
  // toolu_…); else exactly this many letters and digits, no prefix (Mistral's
  // templates refuse other ids when the conversation comes back).
  int id_length = 0;
  // The model's turn ends at its first call (harmony's <|call|> ends the
  // generation): tool grammars allow one call whatever parallel_tool_calls says.
  bool one_call_per_turn = false;
};

// Every family with calls, in the order a chat template is matched against
// them (the first whose markers it holds).
const std::vector<ToolCallFormat>& tool_call_formats();
// The row of a family; nullptr for None.
const ToolCallFormat* tool_call_format(ToolCallFamily family);

// "none", "hermes", "llama3", "mistral", "harmony".
const char* to_string(ToolCallFamily family);
// The family a name spells; nullopt for an unknown name.
std::optional<ToolCallFamily> tool_call_family_named(std::string_view name);
// "none" and every row's name.
const std::vector<std::string>& tool_call_family_names();

// The family whose markers the chat template text holds; None otherwise (the
// template cannot show tools, or shows them in a format this server does not
// parse).
ToolCallFamily detect_tool_call_family(std::string_view chat_template);

// The id of a call the model made, by the family's rule: `protocol_prefix`
// and random letters and digits, or the family's fixed length.
std::string new_tool_call_id(ToolCallFamily family, std::string_view protocol_prefix);

}  // namespace astrai
