// The grammar of tool calls in a model family's own syntax (ToolCallSyntax,
// token_constraint.h: each family's row spells it, in
// engine/chat_planning/tool_call_formats.cpp), each call to one of the given
// tools with arguments valid against that tool's parameters schema: what
// tool_choice "required", a named tool and (lazily) "auto" enforce
// (docs/tool-calling.md). The text around ARGS is fixed (one spelling, as the
// families' templates show it); ARGS is the schema's grammar, JSON
// whitespace included. Several schemas share one GrammarBuilder
// (json_schema_rule), one rule per tool.
#pragma once

#include <string_view>

#include "engine/grammar/grammar.h"
#include "engine/grammar/token_constraint.h"

namespace astrai::grammar {

// tools_json: [{"name": "...", "parameters": {...}}, ...] (at least one).
// single_call: exactly one call; otherwise one or more.
// lazy (tool_choice "auto"): the output may instead be text without calls, as
// each family's parser reads text: with a lazy_opener (hermes), any text
// without it, or such text followed by the calls (the grammar takes over at
// the opener, as llama.cpp's lazy grammars do); without one (llama3,
// mistral), an output whose first non-space byte does not open the calls.
// Throws ConstraintError for a syntax without calls, a malformed tool list,
// or a parameters schema outside the subset or not describing an object
// (the message names the tool).
Grammar tool_call_grammar(const ToolCallSyntax& syntax, std::string_view tools_json, bool single_call,
                          bool lazy = false);

}  // namespace astrai::grammar
