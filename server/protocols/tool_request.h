// The tool fields of a chat request, for both protocols:
//   OpenAI     tools: [{"type": "function", "function": {"name", "description"?, "parameters"?, "strict"?}}],
//              tool_choice: "none" | "auto" | "required" | {"type": "function", "function": {"name"}},
//              parallel_tool_calls: boolean; chat_template_kwargs: object (vLLM's);
//   Anthropic  tools: [{"name", "description"?, "input_schema"}],
//              tool_choice: {"type": "auto" | "any" | "tool" (with "name") | "none", "disable_parallel_tool_use"?}.
// Both become ChatRequest::tools in OpenAI's shape (what chat templates read)
// and a ToolChoice. A malformed definition, a named choice that names no
// tool, or a choice that needs tools without any is an InvalidRequestError
// (400) naming the field.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "engine/tool_calls/tool_call_family.h"
#include "engine/chat_planning/chat_request.h"

namespace astrai {

void read_openai_tools(const nlohmann::ordered_json& body, ChatRequest& request);
void read_anthropic_tools(const nlohmann::ordered_json& body, ChatRequest& request);

// What constrained decoding must enforce for a request's tools. `required`:
// the output is one or more calls (exactly one when !parallel) in `family`'s
// format, each to one of `tools` with arguments valid against its parameters
// schema; `named`: the same with the one tool (tool_call_spec compiles both,
// engine/grammar/tool_call_grammar.h). `auto`: free text, but once the
// family's call opener appears the calls must be valid (a lazy grammar, as
// llama.cpp's: ConstraintSpec::lazy).
struct ToolCallConstraint {
  ToolCallFamily family = ToolCallFamily::None;
  ToolChoice::Mode mode = ToolChoice::Mode::Auto;
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();  // [{"name", "parameters"}] the output may call
  bool parallel = true;
};
// nullopt when there is nothing to constrain (no tools, tool_choice none, or
// a family this server cannot parse).
std::optional<ToolCallConstraint> tool_call_constraint(const ChatRequest& request, ToolCallFamily family);

// The grammar spec that enforces `c` (Kind::ToolCalls; lazy for Auto);
// nullopt for None.
std::optional<grammar::ConstraintSpec> tool_call_spec(const ToolCallConstraint& c);

}  // namespace astrai
