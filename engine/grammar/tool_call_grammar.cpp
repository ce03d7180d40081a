#include "engine/grammar/tool_call_grammar.h"

#include <nlohmann/json.hpp>

#include "engine/grammar/json_rules.h"
#include "engine/grammar/json_schema.h"
#include "engine/grammar/token_constraint.h"

namespace astrai::grammar {

namespace {

using Json = nlohmann::ordered_json;

// The fixed text of one family's calls: list_open, then calls joined by
// `separator`, each call_open + "\"N\"" + before_arguments + ARGS + call_close; then list_close.
struct CallFormat {
  std::string list_open, call_open, before_arguments, call_close, separator, list_close;
};

CallFormat format_named(std::string_view format) {
  if (format == "hermes") return {"", "<tool_call>\n{\"name\": ", ", \"arguments\": ", "}\n</tool_call>", "\n", ""};
  if (format == "llama3") return {"", "{\"name\": ", ", \"parameters\": ", "}", "; ", ""};
  if (format == "mistral") return {"[", "{\"name\": ", ", \"arguments\": ", "}", ", ", "]"};
  throw ConstraintError("", "", "no tool-call grammar for the format '" + std::string(format) + "'");
}

// Arguments are a JSON object in every family (the parsers take nothing
// else), so the parameters schema must describe objects only: a missing type
// becomes "object" ({} is then any object), a list of types must hold
// "object" and is narrowed to it; a schema whose top is anyOf, oneOf, $ref,
// enum or const could allow other values and is refused.
Json object_schema(Json schema, const std::string& tool) {
  const std::string where = "tool '" + tool + "' parameters: ";
  if (!schema.is_object()) throw ConstraintError("", "", where + "must be a JSON Schema object");
  for (const char* key : {"anyOf", "oneOf", "$ref", "enum", "const"})
    if (schema.contains(key))
      throw ConstraintError(key, "/" + std::string(key),
                            where + "'" + key + "' at the top is not supported (the arguments must be an object: use \"type\": \"object\")");
  schema.erase("nullable");
  if (schema.contains("type")) {
    const Json& t = schema["type"];
    bool object = t == "object";
    if (t.is_array())
      for (const Json& name : t) object = object || name == "object";
    if (!object) throw ConstraintError("type", "/type", where + "'type' must be \"object\" (the arguments are a JSON object)");
  }
  schema["type"] = "object";
  return schema;
}

}  // namespace

namespace {

Grammar build(const CallFormat& f, const Json& tools, bool single_call) {
  GrammarBuilder b(kMaxGrammarStates);
  const JsonRules json(b);
  std::vector<Expr> calls;
  for (const Json& tool : tools) {
    if (!tool.is_object() || !tool.contains("name") || !tool["name"].is_string())
      throw ConstraintError("", "", "each tool needs a string name");
    const std::string name = tool["name"].get<std::string>();
    const Json schema = object_schema(tool.value("parameters", Json::object()), name);
    int arguments;
    try {
      arguments = json_schema_rule(b, json, schema.dump(), "tool " + name + " ");
    } catch (const ConstraintError& e) {
      throw ConstraintError(e.keyword, e.pointer, "tool '" + name + "' parameters: " + e.what());
    }
    // The name as JSON text (dump escapes what needs it; tool names need none).
    calls.push_back(seq({literal(f.call_open + Json(name).dump() + f.before_arguments), call(arguments), literal(f.call_close)}));
  }
  const int one_call = b.add("call", alt(std::move(calls)));
  Expr body = single_call ? call(one_call) : seq({call(one_call), star(seq({literal(f.separator), call(one_call)}))});
  const int root = b.add("tool calls", seq({literal(f.list_open), std::move(body), literal(f.list_close)}));
  return b.finish(root);
}

}  // namespace

Grammar tool_call_grammar(std::string_view format, std::string_view tools_json, bool single_call) {
  const CallFormat f = format_named(format);
  const Json tools = Json::parse(tools_json, nullptr, false);
  if (!tools.is_array() || tools.empty()) throw ConstraintError("", "", "a tool-call grammar needs a non-empty list of tools");
  try {
    return build(f, tools, single_call);
  } catch (const GrammarTooLarge&) {
    throw ConstraintError("", "", "the tools' parameters compile to more than " + std::to_string(kMaxGrammarStates) +
                                      " states (the bound of this server)");
  } catch (const GrammarLeftRecursion& e) {
    throw ConstraintError("$ref", "", "'" + e.rule + "' refers to itself without any JSON text between (infinite recursion)");
  } catch (const GrammarEmpty&) {
    throw ConstraintError("", "", "no tool's parameters schema can be satisfied");
  }
}

}  // namespace astrai::grammar
