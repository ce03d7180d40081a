#include "server/protocols/tool_request.h"

#include <set>

#include "engine/chat_planning/reasoning_effort.h"
#include "server/protocols/request_error.h"

namespace astrai {

using json = nlohmann::ordered_json;

namespace {

[[noreturn]] void refuse(const std::string& message) { throw InvalidRequestError(message); }

// OpenAI's rule for function names (a-z, A-Z, 0-9, _ and -, at most 64),
// with "." as well (vLLM and many MCP servers use dotted names).
void check_name(const json& name, const std::string& where) {
  if (!name.is_string()) refuse(where + " must be a string");
  const std::string s = name.get<std::string>();
  if (s.empty() || s.size() > 64) refuse(where + " must be 1 to 64 characters, got " + std::to_string(s.size()));
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'))
      refuse(where + " may hold only letters, digits, '_', '-' and '.', got '" + s + "'");
}

// A parameters schema: a JSON object (a JSON Schema; its content is the
// grammar's to check once constrained decoding enforces it).
void check_schema(const json& schema, const std::string& where) {
  if (!schema.is_object()) refuse(where + " must be a JSON Schema object");
  if (schema.contains("type") && !(schema["type"].is_string() || schema["type"].is_array()))
    refuse(where + ".type must be a string or a list of them");
}

void check_unique(std::set<std::string>& seen, const std::string& name, const std::string& where) {
  if (!seen.insert(name).second) refuse(where + ": the name '" + name + "' is defined twice");
}

// A tool's name, valid and not taken by another tool of the request.
void check_tool_name(const json& name, const std::string& where, std::set<std::string>& seen) {
  check_name(name, where);
  check_unique(seen, name, where);
}

// One tool as chat templates read it (transformers' shape), from the fields
// of either protocol: {"type": "function", "function": {"name",
// "description"?, "parameters"?}}. The name is checked before
// (check_tool_name); the description must be a string (description_at:
// where the protocol spells it, for the message).
struct ToolFields {
  const json* name = nullptr;
  const json* description = nullptr;  // null or absent: none
  const json* parameters = nullptr;   // null or absent: none
  std::string description_at;
};

json template_tool(const ToolFields& f) {
  json function = {{"name", *f.name}};
  if (f.description && !f.description->is_null()) {
    if (!f.description->is_string()) refuse(f.description_at + " must be a string");
    function["description"] = *f.description;
  }
  if (f.parameters && !f.parameters->is_null()) function["parameters"] = *f.parameters;
  return {{"type", "function"}, {"function", std::move(function)}};
}

// The body's `tools` when it has them, whatever the protocol: a list of
// objects, each read by `one` (given where it is, `where` with its index for
// "%", and the names seen so far) into template_tool's shape. An empty list
// is no tools; tools given let the model choose (auto) until tool_choice
// says otherwise.
template <class ReadOne>
void read_tool_list(const json& body, ChatRequest& request, const std::string& where, ReadOne one) {
  if (!body.contains("tools") || body["tools"].is_null()) return;
  const json& tools = body["tools"];
  if (!tools.is_array()) refuse("tools must be a list");
  std::set<std::string> seen;
  json read = json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    std::string at = where;
    at.replace(at.find('%'), 1, std::to_string(i));
    if (!tools[i].is_object()) refuse(at + " must be an object");
    read.push_back(one(tools[i], at, seen));
  }
  request.tools = read.empty() ? json(nullptr) : std::move(read);
  request.tool_choice.mode = request.tools.is_null() ? ToolChoice::Mode::None : ToolChoice::Mode::Auto;
}

const json* member(const json& object, const char* key) { return object.contains(key) ? &object[key] : nullptr; }

void check_named_choice(const ChatRequest& request, const std::string& where) {
  if (request.tool_choice.mode == ToolChoice::Mode::None || request.tool_choice.mode == ToolChoice::Mode::Auto) return;
  if (request.tools.is_null()) refuse(where + " needs tools");
  if (request.tool_choice.mode != ToolChoice::Mode::Named) return;
  for (const json& tool : request.tools)
    if (tool["function"]["name"] == request.tool_choice.name) return;
  refuse(where + " names '" + request.tool_choice.name + "', which is not among the tools");
}

}  // namespace

void read_openai_tools(const json& body, ChatRequest& request) {
  read_tool_list(body, request, "tools[%]", [](const json& tool, const std::string& where, std::set<std::string>& seen) {
    if (!tool.contains("type") || tool["type"] != "function")
      refuse(where + ".type must be 'function' (the only kind of tool this server calls)");
    if (!tool.contains("function") || !tool["function"].is_object()) refuse(where + ".function must be an object");
    const json& f = tool["function"];
    if (!f.contains("name")) refuse(where + ".function.name is required");
    check_tool_name(f["name"], where + ".function.name", seen);
    if (f.contains("description") && !f["description"].is_null() && !f["description"].is_string())
      refuse(where + ".function.description must be a string");
    if (f.contains("parameters") && !f["parameters"].is_null()) check_schema(f["parameters"], where + ".function.parameters");
    if (f.contains("strict") && !f["strict"].is_null() && !f["strict"].is_boolean())
      refuse(where + ".function.strict must be true or false");
    return template_tool({&f["name"], member(f, "description"), member(f, "parameters"), where + ".function.description"});
  });
  if (body.contains("tool_choice") && !body["tool_choice"].is_null()) {
    const json& choice = body["tool_choice"];
    if (choice == "none") request.tool_choice.mode = ToolChoice::Mode::None;
    else if (choice == "auto") request.tool_choice.mode = ToolChoice::Mode::Auto;
    else if (choice == "required") request.tool_choice.mode = ToolChoice::Mode::Required;
    else if (choice.is_object() && choice.value("type", json()) == "function" && choice.contains("function") &&
             choice["function"].is_object() && choice["function"].contains("name") &&
             choice["function"]["name"].is_string()) {
      request.tool_choice = {ToolChoice::Mode::Named, choice["function"]["name"].get<std::string>()};
    } else {
      refuse("tool_choice must be 'none', 'auto', 'required' or {\"type\": \"function\", \"function\": {\"name\": ...}}");
    }
    check_named_choice(request, "tool_choice");
  }
  if (body.contains("parallel_tool_calls") && !body["parallel_tool_calls"].is_null()) {
    if (!body["parallel_tool_calls"].is_boolean()) refuse("parallel_tool_calls must be true or false");
    request.parallel_tool_calls = body["parallel_tool_calls"].get<bool>();
  }
  if (body.contains("chat_template_kwargs") && !body["chat_template_kwargs"].is_null()) {
    if (!body["chat_template_kwargs"].is_object()) refuse("chat_template_kwargs must be an object");
    request.chat_template_kwargs = body["chat_template_kwargs"];
  }
  // OpenAI's reasoning_effort: a thinking budget (reasoning_effort.h), and
  // the template variable of the same name (gpt-oss's "Reasoning: high";
  // not "none", which its template does not know), unless
  // chat_template_kwargs sets it.
  if (body.contains("reasoning_effort") && !body["reasoning_effort"].is_null()) {
    const json& effort = body["reasoning_effort"];
    if (!effort.is_string() || !is_reasoning_effort(effort.get<std::string>()))
      refuse("reasoning_effort must be 'none', 'minimal', 'low', 'medium' or 'high'");
    request.reasoning_effort = effort.get<std::string>();
    if (request.chat_template_kwargs.is_null()) request.chat_template_kwargs = json::object();
    if (effort != "none" && !request.chat_template_kwargs.contains("reasoning_effort"))
      request.chat_template_kwargs["reasoning_effort"] = effort;
  }
}

void read_anthropic_tools(const json& body, ChatRequest& request) {
  // Extended thinking on or off: the template's enable_thinking (what an
  // OpenAI request says with chat_template_kwargs); budget_tokens, the
  // thinking budget (engine/grammar/thinking_budget.h), below max_tokens as
  // Anthropic requires (its floor of 1,024 is not: small models serve small
  // contexts).
  if (body.contains("thinking") && !body["thinking"].is_null()) {
    const json& thinking = body["thinking"];
    if (!thinking.is_object() || !thinking.contains("type") || (thinking["type"] != "enabled" && thinking["type"] != "disabled"))
      refuse("thinking must be {\"type\": \"enabled\", \"budget_tokens\": N} or {\"type\": \"disabled\"}");
    request.chat_template_kwargs = {{"enable_thinking", thinking["type"] == "enabled"}};
    if (thinking["type"] == "enabled" && thinking.contains("budget_tokens") && !thinking["budget_tokens"].is_null()) {
      const json& budget = thinking["budget_tokens"];
      if (!budget.is_number_integer() || budget.get<int64_t>() < 1 || budget.get<int64_t>() > (int64_t(1) << 30))
        refuse("thinking.budget_tokens must be a positive integer");
      // max_tokens is read (and required) with the common parameters, before this.
      if (body.contains("max_tokens") && body["max_tokens"].is_number_integer() &&
          budget.get<int64_t>() >= body["max_tokens"].get<int64_t>())
        refuse("max_tokens must be greater than thinking.budget_tokens");
      request.thinking_budget = budget.get<int>();
    }
  }
  read_tool_list(body, request, "tools.%", [](const json& tool, const std::string& where, std::set<std::string>& seen) {
    if (tool.contains("type") && !tool["type"].is_null() && tool["type"] != "custom")
      refuse(where + ".type '" + tool["type"].dump() + "' is not supported (client tools only: name, description, input_schema)");
    if (!tool.contains("name")) refuse(where + ".name is required");
    check_tool_name(tool["name"], where + ".name", seen);
    if (!tool.contains("input_schema")) refuse(where + ".input_schema is required");
    check_schema(tool["input_schema"], where + ".input_schema");
    return template_tool({&tool["name"], member(tool, "description"), &tool["input_schema"], where + ".description"});
  });
  if (body.contains("tool_choice") && !body["tool_choice"].is_null()) {
    const json& choice = body["tool_choice"];
    if (!choice.is_object() || !choice.contains("type") || !choice["type"].is_string())
      refuse("tool_choice must be {\"type\": \"auto\" | \"any\" | \"tool\" | \"none\"}");
    const std::string type = choice["type"];
    if (type == "auto") request.tool_choice.mode = ToolChoice::Mode::Auto;
    else if (type == "any") request.tool_choice.mode = ToolChoice::Mode::Required;
    else if (type == "none") request.tool_choice.mode = ToolChoice::Mode::None;
    else if (type == "tool") {
      if (!choice.contains("name") || !choice["name"].is_string()) refuse("tool_choice.name is required with type 'tool'");
      request.tool_choice = {ToolChoice::Mode::Named, choice["name"].get<std::string>()};
    } else {
      refuse("tool_choice.type must be 'auto', 'any', 'tool' or 'none', got '" + type + "'");
    }
    if (choice.contains("disable_parallel_tool_use") && !choice["disable_parallel_tool_use"].is_null()) {
      if (!choice["disable_parallel_tool_use"].is_boolean()) refuse("tool_choice.disable_parallel_tool_use must be true or false");
      request.parallel_tool_calls = !choice["disable_parallel_tool_use"].get<bool>();
    }
    check_named_choice(request, "tool_choice");
  }
}

}  // namespace astrai
