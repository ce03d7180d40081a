// The grammar of tool calls in a model family's own format (the formats that
// engine/tool_calls parses), each call to one of the given tools with
// arguments valid against that tool's parameters schema: what tool_choice
// "required" and a named tool enforce (docs/tool-calling.md).
//   hermes   <tool_call>\n{"name": "N", "arguments": ARGS}\n</tool_call>, calls joined by "\n"
//   llama3   {"name": "N", "parameters": ARGS}, calls joined by "; "
//   mistral  [{"name": "N", "arguments": ARGS}, ...]
// Mistral's [TOOL_CALLS] is a control token, which the vocabulary spells as
// nothing (token_vocabulary.h), so the grammar starts at the list; the parser
// reads an output that starts with "[" as the list. The text around ARGS is
// fixed (one spelling, as the families' templates show it); ARGS is the
// schema's grammar, JSON whitespace included. Several schemas share one
// GrammarBuilder (json_schema_rule), one rule per tool.
#pragma once

#include <string_view>

#include "engine/grammar/grammar.h"

namespace astrai::grammar {

// tools_json: [{"name": "...", "parameters": {...}}, ...] (at least one).
// single_call: exactly one call; otherwise one or more.
// lazy (tool_choice "auto"): the output may instead be text without calls, as
// each family's parser reads text: hermes, any text without "<tool_call>",
// or such text followed by the calls (the grammar takes over at the opener,
// as llama.cpp's lazy grammars do); llama3 and mistral, an output whose
// first non-space byte is not the calls' "{" or "[" (those start calls).
// Throws
// ConstraintError for an unknown format, a malformed tool list, or a
// parameters schema outside the subset or not describing an object (the
// message names the tool).
Grammar tool_call_grammar(std::string_view format, std::string_view tools_json, bool single_call, bool lazy = false);

}  // namespace astrai::grammar
