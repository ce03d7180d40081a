// The turns of an agent's conversation that carry tools, read from each
// protocol's message shapes into ChatMessages (the template's shape, as
// transformers and vLLM pass them: tool call arguments as objects):
//   OpenAI     {"role": "assistant", "content": null | ..., "tool_calls": [{"id", "type": "function",
//               "function": {"name", "arguments": JSON text}}]}, {"role": "tool", "tool_call_id", "content"};
//   Anthropic  assistant content blocks text and tool_use {"id", "name", "input"} (thinking blocks are
//              dropped: templates do not show past reasoning); user content blocks text and tool_result
//              {"tool_use_id", "content": string | [text blocks], "is_error"?}, each result a tool turn
//              of its own, before the turn's text.
// Problems are recorded in the FieldChecker (422, as every other bad field).
#pragma once

#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/chat/chat_message.h"
#include "server/protocols/validation.h"

namespace astrai {

// An OpenAI message's tool_calls, in the template's shape; nullopt on error.
std::optional<nlohmann::ordered_json> read_openai_tool_calls(FieldChecker& check, const nlohmann::ordered_json& value,
                                                             const nlohmann::ordered_json& loc);

// One Anthropic message's content (string or blocks) as one or more turns.
void read_anthropic_turn(FieldChecker& check, const nlohmann::ordered_json& content, const nlohmann::ordered_json& loc,
                         ChatRole role, std::vector<ChatMessage>& out);

// OpenAI's arguments text as the object templates read; the text itself when it is not JSON.
nlohmann::ordered_json arguments_for_template(const std::string& arguments);

}  // namespace astrai
