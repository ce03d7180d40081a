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

#include <nlohmann/json.hpp>

#include "engine/chat_planning/chat_request.h"

namespace astrai {

void read_openai_tools(const nlohmann::ordered_json& body, ChatRequest& request);
void read_anthropic_tools(const nlohmann::ordered_json& body, ChatRequest& request);

}  // namespace astrai
