#include "engine/grammar/tool_call_grammar.h"

#include <nlohmann/json.hpp>

#include "engine/grammar/json_rules.h"
#include "engine/grammar/json_schema.h"
#include "engine/grammar/text_automata.h"
#include "engine/grammar/token_constraint.h"

namespace astrai::grammar {

namespace {

using Json = nlohmann::ordered_json;

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

// Text that is not a call in the llama3 and mistral formats, as their parsers
// read it: empty, or whitespace then a first byte other than the list's
// opener (`opener`), then anything.
Expr text_not_opening(uint8_t opener) {
  std::vector<ByteRange> first;
  for (int b = 0; b < 256; ++b) {
    if (b == opener || b == '\t' || b == '\n' || b == '\r' || b == ' ') continue;
    if (!first.empty() && first.back().hi == b - 1) first.back().hi = uint8_t(b);
    else first.push_back({uint8_t(b), uint8_t(b)});
  }
  return seq({star(bytes(kJsonWhitespace)), optional(seq({bytes(std::move(first)), star(bytes({{0, 255}}))}))});
}

Grammar build(const ToolCallSyntax& f, const Json& tools, bool single_call, bool lazy) {
  GrammarBuilder b(kMaxGrammarStates);
  const JsonRules json(b);
  // Each call in full, and (lazy, with an opener: hermes) without its
  // opener, which the text before it already read.
  std::vector<Expr> calls, calls_after_opener;
  const std::string& opener = f.lazy_opener;
  if (lazy && !opener.empty() && !(f.list_open.empty() && f.call_open.starts_with(opener)))
    throw ConstraintError("", "", "a lazy tool-call opener must start each call (and the calls have no list)");
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
    // The name as JSON text (dump escapes what needs it; tool names need
    // none), or as it is where the family writes it bare (a name with bytes
    // that would end the bare word is refused: the parser could not read it back).
    if (f.bare_name && (name.empty() || name.find_first_of(" \t\r\n<") != std::string::npos))
      throw ConstraintError("", "", "tool '" + name + "': this model writes tool names bare, so a name must be "
                                    "non-empty without whitespace or '<'");
    const std::string head = f.call_open + (f.bare_name ? name : Json(name).dump()) + f.before_arguments;
    calls.push_back(seq({literal(head), call(arguments), literal(f.call_close)}));
    if (!opener.empty())
      calls_after_opener.push_back(seq({literal(head.substr(opener.size())), call(arguments), literal(f.call_close)}));
  }
  const int one_call = b.add("call", alt(std::move(calls)));
  const Expr more_calls = single_call ? empty_expr() : star(seq({literal(f.separator), call(one_call)}));
  if (!lazy) {
    const int root = b.add("tool calls", seq({literal(f.list_open), call(one_call), more_calls, literal(f.list_close)}));
    return b.finish(root);
  }
  // tool_choice "auto": text, or calls where the family's parser starts reading them.
  if (!opener.empty()) {  // hermes: calls after any text without the opener
    const int plain = b.declare("text without " + opener);
    b.define_automaton(plain, text_without_marker(opener));
    const int before = b.declare("text up to " + opener);
    b.define_automaton(before, text_through_marker(opener));
    const int first = b.add("call after its " + opener, alt(std::move(calls_after_opener)));
    const int root = b.add("text or tool calls", alt({call(plain), seq({call(before), call(first), more_calls})}));
    return b.finish(root);
  }
  // No opener (llama3, mistral): the output is calls when it starts (after whitespace) with them.
  const std::string opening = f.list_open.empty() ? f.call_open : f.list_open;
  const Expr listed = seq({star(bytes(kJsonWhitespace)), literal(f.list_open), call(one_call), more_calls, literal(f.list_close)});
  const int root = b.add("text or tool calls", alt({text_not_opening(uint8_t(opening[0])), listed}));
  return b.finish(root);
}

}  // namespace

Grammar tool_call_grammar(const ToolCallSyntax& f, std::string_view tools_json, bool single_call, bool lazy) {
  if (f.call_open.empty()) throw ConstraintError("", "", "a tool-call grammar needs the family's call syntax");
  const Json tools = Json::parse(tools_json, nullptr, false);
  if (!tools.is_array() || tools.empty()) throw ConstraintError("", "", "a tool-call grammar needs a non-empty list of tools");
  try {
    return build(f, tools, single_call, lazy);
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
