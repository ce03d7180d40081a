#include "server/protocols/tool_messages.h"

namespace astrai {

using json = nlohmann::ordered_json;

json arguments_for_template(const std::string& arguments) {
  json value = json::parse(arguments, nullptr, false);
  if (value.is_discarded()) return arguments;
  return value;
}

std::optional<json> read_openai_tool_calls(FieldChecker& check, const json& value, const json& loc) {
  if (!check.is_array(value, loc)) return std::nullopt;
  json calls = json::array();
  bool ok = true;
  for (size_t i = 0; i < value.size(); ++i) {
    const json call_loc = loc_append(loc, i);
    const json& call = value[i];
    if (!check.is_object(call, call_loc)) {
      ok = false;
      continue;
    }
    std::optional<std::string> id, name, arguments;
    id = check.string_field(call, call_loc, "id", true);
    if (const json* t = check.field(call, call_loc, "type"); t && *t != "function")
      check.add(loc_append(call_loc, "type"), "Input should be 'function'", "literal_error");
    const json* f = check.field(call, call_loc, "function", true);
    const json f_loc = loc_append(call_loc, "function");
    if (f && check.is_object(*f, f_loc)) {
      name = check.string_field(*f, f_loc, "name", true);
      arguments = check.string_field(*f, f_loc, "arguments", true);
    }
    if (!id || !name || !arguments) {
      ok = false;
      continue;
    }
    calls.push_back({{"id", *id},
                     {"type", "function"},
                     {"function", {{"name", *name}, {"arguments", arguments_for_template(*arguments)}}}});
  }
  if (!ok) return std::nullopt;
  return calls;
}

namespace {

// A tool_result's content: a string, or text blocks joined by "\n".
std::optional<std::string> tool_result_text(FieldChecker& check, const json& block, const json& loc) {
  const json* content = check.field(block, loc, "content");
  if (!content) return std::string();
  if (content->is_string()) return content->get<std::string>();
  return read_text_content(check, *content, loc_append(loc, "content"));
}

}  // namespace

void read_anthropic_turn(FieldChecker& check, const json& content, const json& loc, ChatRole role,
                         std::vector<ChatMessage>& out) {
  if (!content.is_array()) {  // a string (or an error read_text_content names)
    if (auto text = read_text_content(check, content, loc)) out.push_back({role, std::move(*text)});
    return;
  }
  if (content.empty()) {
    check.add(loc, "List should have at least 1 item after validation, not 0", "too_short");
    return;
  }
  ChatMessage turn{role, ""};
  std::vector<ChatMessage> results;  // a user turn's tool results come first
  bool has_text = false;
  for (size_t i = 0; i < content.size(); ++i) {
    const json block_loc = loc_append(loc, i);
    const json& block = content[i];
    if (!check.is_object(block, block_loc)) continue;
    const json* type = check.field(block, block_loc, "type", true);
    if (!type) continue;
    const std::string kind = type->is_string() ? type->get<std::string>() : "";
    if (kind == "text") {
      if (auto text = read_text_content(check, json::array({block}), loc)) {
        if (has_text) turn.content += '\n';
        turn.content += *text;
        has_text = true;
      }
    } else if (kind == "tool_use" && role == ChatRole::Assistant) {
      std::optional<std::string> id, name;
      if (const json* v = check.field(block, block_loc, "id", true)) id = check.string(*v, loc_append(block_loc, "id"));
      if (const json* v = check.field(block, block_loc, "name", true))
        name = check.string(*v, loc_append(block_loc, "name"));
      const json* input = check.field(block, block_loc, "input", true);
      if (input && !input->is_object()) check.add(loc_append(block_loc, "input"), "Input should be a valid dictionary", "dict_type");
      if (!id || !name || !input || !input->is_object()) continue;
      if (turn.tool_calls.is_null()) turn.tool_calls = json::array();
      turn.tool_calls.push_back({{"id", *id}, {"type", "function"}, {"function", {{"name", *name}, {"arguments", *input}}}});
    } else if (kind == "tool_result" && role == ChatRole::User) {
      std::optional<std::string> id;
      if (const json* v = check.field(block, block_loc, "tool_use_id", true))
        id = check.string(*v, loc_append(block_loc, "tool_use_id"));
      auto text = tool_result_text(check, block, block_loc);
      if (!id || !text) continue;
      ChatMessage result{ChatRole::Tool, std::move(*text)};
      result.tool_call_id = *id;
      results.push_back(std::move(result));
    } else if (kind == "thinking" && role == ChatRole::Assistant) {
      // Past reasoning goes to the template, which decides what to show again
      // (Qwen 3 keeps the last turns', gpt-oss a tool call's analysis).
      if (const json* v = check.field(block, block_loc, "thinking", true))
        if (auto text = check.string(*v, loc_append(block_loc, "thinking"))) turn.reasoning += *text;
    } else if (kind == "redacted_thinking" && role == ChatRole::Assistant) {
      continue;  // encrypted: nothing a template could show
    } else {
      check.add(loc_append(block_loc, "type"),
                role == ChatRole::Assistant ? "Input should be 'text', 'tool_use' or 'thinking'"
                                            : "Input should be 'text' or 'tool_result'",
                "literal_error");
    }
  }
  for (ChatMessage& r : results) out.push_back(std::move(r));
  if (has_text || !turn.tool_calls.is_null()) {
    out.push_back(std::move(turn));
  }
}

}  // namespace astrai
