// response_format, structured_outputs and guided_* (see structured_output_fields.h).
#include "server/protocols/structured_output_fields.h"

#include <string>
#include <utility>
#include <vector>

namespace astrai {

using json = nlohmann::ordered_json;
using grammar::ConstraintSpec;

namespace {

// A schema given as an object, or as the text of one (vLLM accepts both).
std::optional<std::string> schema_text(FieldChecker& check, const json& value, const json& loc) {
  if (value.is_object()) return value.dump();
  if (value.is_string()) {
    const json parsed = json::parse(value.get<std::string>(), nullptr, false);
    if (parsed.is_object()) return parsed.dump();
    check.add(loc, "Input should be a JSON schema: an object, or the text of one", "value_error");
    return std::nullopt;
  }
  check.add(loc, "Input should be a valid dictionary", "dict_type");
  return std::nullopt;
}

std::optional<ConstraintSpec> regex_spec(FieldChecker& check, const json& value, const json& loc) {
  const auto text = check.string(value, loc);
  if (!text) return std::nullopt;
  return ConstraintSpec{ConstraintSpec::Kind::Regex, *text, {}};
}

std::optional<ConstraintSpec> choice_spec(FieldChecker& check, const json& value, const json& loc) {
  if (!check.is_array(value, loc)) return std::nullopt;
  if (value.empty()) {
    check.add(loc, "List should have at least 1 item after validation, not 0", "too_short");
    return std::nullopt;
  }
  ConstraintSpec spec{ConstraintSpec::Kind::Choice, "", {}};
  bool ok = true;
  for (size_t i = 0; i < value.size(); ++i) {
    const auto s = check.string(value[i], loc_append(loc, int(i)));
    ok = ok && s.has_value();
    if (s) spec.choices.push_back(*s);
  }
  if (!ok) return std::nullopt;
  return spec;
}

std::optional<ConstraintSpec> json_spec(FieldChecker& check, const json& value, const json& loc) {
  const auto text = schema_text(check, value, loc);
  if (!text) return std::nullopt;
  return ConstraintSpec{ConstraintSpec::Kind::JsonSchema, *text, {}};
}

// response_format: nullopt for "text" (and for a bad shape, recorded).
std::optional<ConstraintSpec> response_format_spec(FieldChecker& check, const json& value, const json& loc) {
  if (!check.is_object(value, loc)) return std::nullopt;
  const json* type = check.field(value, loc, "type", true);
  if (!type) return std::nullopt;
  const auto kind = check.string(*type, loc_append(loc, "type"));
  if (!kind) return std::nullopt;
  if (*kind == "text") return std::nullopt;
  if (*kind == "json_object") return ConstraintSpec{ConstraintSpec::Kind::JsonObject, "", {}};
  if (*kind != "json_schema") {
    check.add(loc_append(loc, "type"), "Input should be 'text', 'json_object' or 'json_schema'", "literal_error");
    return std::nullopt;
  }
  const json schema_loc = loc_append(loc, "json_schema");
  const json* wrapper = check.field(value, loc, "json_schema", true);
  if (!wrapper || !check.is_object(*wrapper, schema_loc)) return std::nullopt;
  if (const json* name = check.field(*wrapper, schema_loc, "name", true)) check.string(*name, loc_append(schema_loc, "name"));
  if (const json* strict = check.field(*wrapper, schema_loc, "strict")) check.boolean(*strict, loc_append(schema_loc, "strict"));
  if (const json* d = check.field(*wrapper, schema_loc, "description")) check.string(*d, loc_append(schema_loc, "description"));
  // OpenAI's own field is "schema"; without one, any JSON object (as OpenAI's
  // default schema {} allows any value, and a reply is an object here).
  const json* schema = check.field(*wrapper, schema_loc, "schema");
  if (!schema) return ConstraintSpec{ConstraintSpec::Kind::JsonObject, "", {}};
  return json_spec(check, *schema, loc_append(schema_loc, "schema"));
}

// structured_outputs: exactly one of json, regex, choice.
std::optional<ConstraintSpec> structured_outputs_spec(FieldChecker& check, const json& value, const json& loc) {
  if (!check.is_object(value, loc)) return std::nullopt;
  std::vector<std::pair<std::string, std::optional<ConstraintSpec>>> given;
  if (const json* v = check.field(value, loc, "json")) given.emplace_back("json", json_spec(check, *v, loc_append(loc, "json")));
  if (const json* v = check.field(value, loc, "regex")) given.emplace_back("regex", regex_spec(check, *v, loc_append(loc, "regex")));
  if (const json* v = check.field(value, loc, "choice")) given.emplace_back("choice", choice_spec(check, *v, loc_append(loc, "choice")));
  for (const auto& [key, _] : value.items())
    if (key != "json" && key != "regex" && key != "choice")
      check.add(loc_append(loc, key), "Not supported: structured_outputs takes one of json, regex and choice",
                "value_error");
  if (given.size() != 1) {
    if (given.empty()) check.add(loc, "Give one of json, regex and choice", "missing");
    else check.add(loc, "Give only one of json, regex and choice", "value_error");
    return std::nullopt;
  }
  return given.front().second;
}

}  // namespace

void read_structured_output_fields(FieldChecker& check, const json& body, ChatRequest& request) {
  const json body_loc = json::array({"body"});
  struct Given {
    const char* field;
    std::optional<ConstraintSpec> spec;
  };
  std::vector<Given> given;
  if (const json* v = check.field(body, body_loc, "response_format")) {
    auto spec = response_format_spec(check, *v, loc_append(body_loc, "response_format"));
    if (spec) given.push_back({"response_format", std::move(spec)});
  }
  if (const json* v = check.field(body, body_loc, "structured_outputs"))
    given.push_back({"structured_outputs", structured_outputs_spec(check, *v, loc_append(body_loc, "structured_outputs"))});
  if (const json* v = check.field(body, body_loc, "guided_json"))
    given.push_back({"guided_json", json_spec(check, *v, loc_append(body_loc, "guided_json"))});
  if (const json* v = check.field(body, body_loc, "guided_regex"))
    given.push_back({"guided_regex", regex_spec(check, *v, loc_append(body_loc, "guided_regex"))});
  if (const json* v = check.field(body, body_loc, "guided_choice"))
    given.push_back({"guided_choice", choice_spec(check, *v, loc_append(body_loc, "guided_choice"))});
  if (given.size() > 1) {
    std::string names;
    for (const Given& g : given) names += (names.empty() ? "" : ", ") + std::string(g.field);
    check.add(loc_append(body_loc, given[1].field), "Only one output constraint per request, got " + names,
              "value_error");
    return;
  }
  if (given.size() == 1) request.constraint = std::move(given.front().spec);
}

}  // namespace astrai
