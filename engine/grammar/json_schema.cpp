#include "engine/grammar/json_schema.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/grammar/json_rules.h"
#include "engine/grammar/regex.h"
#include "engine/grammar/token_constraint.h"

namespace astrai::grammar {

namespace {

using Json = nlohmann::ordered_json;  // properties keep the schema's order

constexpr int kMaxCountKeyword = 1000;  // minItems, maxItems, minLength, maxLength

const std::set<std::string> kAnnotations = {"title",    "description", "default", "format",     "examples", "$comment",
                                            "$schema",  "$id",         "$defs",   "definitions", "deprecated", "readOnly",
                                            "writeOnly"};
const std::set<std::string> kHandled = {"type",      "properties", "required",  "additionalProperties", "enum",
                                        "const",     "items",      "prefixItems", "minItems",          "maxItems",
                                        "minLength", "maxLength",  "pattern",   "minimum",             "maximum",
                                        "exclusiveMinimum", "exclusiveMaximum", "anyOf", "oneOf", "$ref", "nullable"};
const std::vector<std::string> kTypes = {"null", "boolean", "object", "array", "number", "integer", "string"};

std::string pointer_token(const std::string& key) {
  std::string out;
  for (const char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

[[noreturn]] void refuse(const std::string& keyword, const std::string& pointer, const std::string& why) {
  throw ConstraintError(keyword, pointer, "JSON Schema " + (keyword.empty() ? std::string("") : "'" + keyword + "' ") +
                                              "at '" + pointer + "': " + why);
}

class SchemaCompiler {
 public:
  // Rules go into `b` (beside any others it holds: a tool-call grammar puts
  // several schemas in one), named by their pointers after `name_prefix`.
  SchemaCompiler(const Json& root, GrammarBuilder& b, const JsonRules& json, std::string name_prefix)
      : root_(root), b_(b), json_(json), prefix_(std::move(name_prefix)) {}

  int compile() { return rule_of(root_, "", 0); }
  const std::string& current_pointer() const { return current_; }

 private:
  const Json& root_;
  GrammarBuilder& b_;
  const JsonRules& json_;
  std::string prefix_;
  std::map<std::string, int> rules_;  // schema pointer -> its rule
  std::string current_;

  // The rule of the schema at `ptr` (compiled once: $ref and recursion share it).
  int rule_of(const Json& s, const std::string& ptr, int depth) {
    if (const auto it = rules_.find(ptr); it != rules_.end()) return it->second;
    if (depth > kMaxSchemaDepth)
      refuse("", ptr, "nested deeper than " + std::to_string(kMaxSchemaDepth) + " levels (the bound of this server)");
    const int r = b_.declare(prefix_ + (ptr.empty() ? "#" : ptr));
    rules_[ptr] = r;
    const Expr body = value_of(s, ptr, depth);
    current_ = ptr;
    b_.define(r, body);
    return r;
  }
  Expr sub(const Json& s, const std::string& ptr, int depth) { return call(rule_of(s, ptr, depth + 1)); }

  static void check_keywords(const Json& s, const std::string& ptr) {
    for (const auto& [key, value] : s.items())
      if (!kAnnotations.contains(key) && !kHandled.contains(key))
        refuse(key, ptr + "/" + pointer_token(key), "this keyword is not supported (docs/structured-outputs.md lists the subset)");
  }
  // Refuses every keyword of s beside `allowed` and the annotations.
  static void only_with(const Json& s, const std::string& ptr, const std::string& main, const std::set<std::string>& allowed) {
    for (const auto& [key, value] : s.items())
      if (key != main && !kAnnotations.contains(key) && !allowed.contains(key))
        refuse(key, ptr + "/" + pointer_token(key), "not supported beside '" + main + "'");
  }
  static int count_keyword(const Json& s, const std::string& key, const std::string& ptr, int fallback) {
    if (!s.contains(key)) return fallback;
    const Json& v = s[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 0) refuse(key, ptr + "/" + key, "must be a non-negative integer");
    if (v.get<int64_t>() > kMaxCountKeyword)
      refuse(key, ptr + "/" + key, "above " + std::to_string(kMaxCountKeyword) + " (the bound of this server)");
    return int(v.get<int64_t>());
  }

  Expr value_of(const Json& s, const std::string& ptr, int depth) {
    current_ = ptr;
    if (s.is_boolean()) return s.get<bool>() ? json_.value() : alt({});
    if (!s.is_object()) refuse("", ptr, "a schema must be an object or a boolean");
    check_keywords(s, ptr);
    bool nullable = false;
    if (s.contains("nullable")) {
      if (!s["nullable"].is_boolean()) refuse("nullable", ptr + "/nullable", "must be a boolean");
      nullable = s["nullable"].get<bool>();
    }
    auto with_null = [&](Expr e) { return nullable ? alt({std::move(e), literal("null")}) : e; };
    if (s.contains("$ref")) return with_null(reference(s, ptr, depth));
    for (const char* key : {"anyOf", "oneOf"})
      if (s.contains(key)) return with_null(any_of(s, key, ptr, depth));
    if (s.contains("enum") || s.contains("const")) return literals(s, ptr, nullable);

    std::vector<std::string> types = types_of(s, ptr);
    if (nullable && std::find(types.begin(), types.end(), "null") == types.end()) types.push_back("null");
    std::vector<Expr> alts;
    for (const auto& t : types) {
      if (t == "null") alts.push_back(literal("null"));
      if (t == "boolean") alts.push_back(alt({literal("true"), literal("false")}));
      if (t == "integer") alts.push_back(integer(s, ptr));
      if (t == "number") {
        for (const char* key : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
          if (s.contains(key) && std::find(types.begin(), types.end(), "integer") == types.end())
            refuse(key, ptr + "/" + key, "bounds are supported on integers only");
        alts.push_back(json_.number());
      }
      if (t == "string") alts.push_back(string(s, ptr));
      if (t == "array") alts.push_back(array(s, ptr, depth));
      if (t == "object") alts.push_back(object(s, ptr, depth));
    }
    return alts.size() == 1 ? std::move(alts[0]) : alt(std::move(alts));
  }

  std::vector<std::string> types_of(const Json& s, const std::string& ptr) {
    std::vector<std::string> types;
    if (s.contains("type")) {
      const Json& t = s["type"];
      auto add = [&](const Json& name) {
        if (!name.is_string() || std::find(kTypes.begin(), kTypes.end(), name.get<std::string>()) == kTypes.end())
          refuse("type", ptr + "/type", "unknown type " + name.dump());
        if (std::find(types.begin(), types.end(), name.get<std::string>()) == types.end())
          types.push_back(name.get<std::string>());
      };
      if (t.is_array()) {
        if (t.empty()) refuse("type", ptr + "/type", "an empty list of types");
        for (const auto& name : t) add(name);
      } else {
        add(t);
      }
      return types;
    }
    // No type: the types the other keywords describe (a subset of what the schema allows).
    auto any = [&](std::initializer_list<const char*> keys) {
      for (const char* k : keys)
        if (s.contains(k)) return true;
      return false;
    };
    if (any({"properties", "required", "additionalProperties"})) types.push_back("object");
    if (any({"items", "prefixItems", "minItems", "maxItems"})) types.push_back("array");
    if (any({"minLength", "maxLength", "pattern"})) types.push_back("string");
    if (any({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})) types.push_back("integer");
    if (types.empty()) types = kTypes;
    return types;
  }

  Expr reference(const Json& s, const std::string& ptr, int depth) {
    only_with(s, ptr, "$ref", {"nullable"});
    const Json& ref = s["$ref"];
    if (!ref.is_string()) refuse("$ref", ptr + "/$ref", "must be a string");
    const std::string target = ref.get<std::string>();
    if (target.empty() || target[0] != '#')
      refuse("$ref", ptr + "/$ref", "only references inside the schema (#/$defs/..., #/definitions/...) are supported");
    const std::string pointer = target.substr(1);
    const Json* found = nullptr;
    try {
      found = &root_.at(Json::json_pointer(pointer));
    } catch (const std::exception&) {
      refuse("$ref", ptr + "/$ref", "'" + target + "' resolves to nothing");
    }
    return call(rule_of(*found, pointer, depth + 1));
  }

  Expr any_of(const Json& s, const char* key, const std::string& ptr, int depth) {
    only_with(s, ptr, key, {"nullable"});
    const Json& list = s[key];
    const std::string here = ptr + "/" + key;
    if (!list.is_array() || list.empty()) refuse(key, here, "must be a non-empty array of schemas");
    std::vector<Expr> alts;
    for (size_t i = 0; i < list.size(); ++i) alts.push_back(sub(list[i], here + "/" + std::to_string(i), depth));
    return alt(std::move(alts));
  }

  static bool has_type(const Json& v, const std::string& t) {
    if (t == "null") return v.is_null();
    if (t == "boolean") return v.is_boolean();
    if (t == "object") return v.is_object();
    if (t == "array") return v.is_array();
    if (t == "string") return v.is_string();
    if (t == "number") return v.is_number();
    if (t == "integer")
      return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
    return false;
  }

  Expr literals(const Json& s, const std::string& ptr, bool nullable) {
    const bool is_enum = s.contains("enum");
    if (is_enum && s.contains("const")) refuse("const", ptr + "/const", "not supported beside 'enum'");
    const char* key = is_enum ? "enum" : "const";
    only_with(s, ptr, key, {"type", "nullable"});
    std::vector<Json> values;
    if (is_enum) {
      if (!s["enum"].is_array() || s["enum"].empty()) refuse("enum", ptr + "/enum", "must be a non-empty array");
      for (const auto& v : s["enum"]) values.push_back(v);
    } else {
      values.push_back(s["const"]);
    }
    const std::vector<std::string> types = s.contains("type") ? types_of(s, ptr) : std::vector<std::string>{};
    std::vector<Expr> alts;
    std::set<std::string> seen;
    for (const auto& v : values) {
      bool typed = types.empty();
      for (const auto& t : types) typed = typed || has_type(v, t) || (t == "number" && v.is_number());
      if (!typed) continue;
      const std::string text = v.dump();
      if (seen.insert(text).second) alts.push_back(literal(text));
    }
    if (nullable && seen.insert("null").second) alts.push_back(literal("null"));
    if (alts.empty()) refuse(key, ptr + "/" + key, "no value of the listed type");
    return alt(std::move(alts));
  }

  Expr integer(const Json& s, const std::string& ptr) {
    bool bounded = false;
    double lo = -double(kMaxJsonInteger), hi = double(kMaxJsonInteger);
    std::string lo_key = "minimum", hi_key = "maximum";
    for (const char* key : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
      if (!s.contains(key)) continue;
      const Json& v = s[key];
      if (!v.is_number()) refuse(key, ptr + "/" + key, "must be a number");
      const double x = v.get<double>();
      if (!std::isfinite(x)) refuse(key, ptr + "/" + key, "must be finite");
      bounded = true;
      const std::string k = key;
      if (k == "minimum" && std::ceil(x) > lo) lo = std::ceil(x), lo_key = k;
      if (k == "exclusiveMinimum" && std::floor(x) + 1 > lo) lo = std::floor(x) + 1, lo_key = k;
      if (k == "maximum" && std::floor(x) < hi) hi = std::floor(x), hi_key = k;
      if (k == "exclusiveMaximum" && std::ceil(x) - 1 < hi) hi = std::ceil(x) - 1, hi_key = k;
    }
    if (!bounded) return json_.integer();
    // Clamped as integers: the double nearest kMaxJsonInteger is 1e18, one digit more.
    auto clamp = [](double x) {
      if (x >= double(kMaxJsonInteger)) return kMaxJsonInteger;
      if (x <= -double(kMaxJsonInteger)) return -kMaxJsonInteger;
      return int64_t(x);
    };
    const int64_t ilo = clamp(lo), ihi = clamp(hi);
    if (ilo > ihi) refuse(s.contains(hi_key) ? hi_key : lo_key, ptr + "/" + (s.contains(hi_key) ? hi_key : lo_key),
                          "no integer within the bounds (|n| <= " + std::to_string(kMaxJsonInteger) + ")");
    return integer_range(ilo, ihi);
  }

  Expr string(const Json& s, const std::string& ptr) {
    const int min = count_keyword(s, "minLength", ptr, 0);
    const int max = count_keyword(s, "maxLength", ptr, Expr::kUnbounded);
    if (max != Expr::kUnbounded && max < min) refuse("maxLength", ptr + "/maxLength", "below minLength");
    if (s.contains("pattern")) {
      for (const char* key : {"minLength", "maxLength"})
        if (s.contains(key)) refuse(key, ptr + "/" + key, "not supported together with 'pattern'");
      const Json& p = s["pattern"];
      if (!p.is_string()) refuse("pattern", ptr + "/pattern", "must be a string");
      CompiledRegex re = compile_regex(p.get<std::string>(), "pattern", ptr + "/pattern");
      // JSON Schema patterns search: an unanchored end allows any text there.
      std::vector<Expr> parts;
      if (!re.anchored_start) parts.push_back(star(any_code_point()));
      parts.push_back(std::move(re.expr));
      if (!re.anchored_end) parts.push_back(star(any_code_point()));
      return seq({byte_char('"'), json_escaped(seq(std::move(parts))), byte_char('"')});
    }
    if (min == 0 && max == Expr::kUnbounded) return json_.string();
    return seq({byte_char('"'), repeat(json_string_char(), min, max), byte_char('"')});
  }

  Expr array(const Json& s, const std::string& ptr, int depth) {
    std::vector<Expr> prefix;
    if (s.contains("prefixItems")) {
      const Json& p = s["prefixItems"];
      if (!p.is_array()) refuse("prefixItems", ptr + "/prefixItems", "must be an array of schemas");
      if (p.size() > size_t(kMaxCountKeyword)) refuse("prefixItems", ptr + "/prefixItems", "too many items");
      for (size_t i = 0; i < p.size(); ++i) prefix.push_back(sub(p[i], ptr + "/prefixItems/" + std::to_string(i), depth));
    }
    bool more = true;  // items beyond the prefix allowed
    Expr item = json_.value();
    if (s.contains("items")) {
      const Json& it = s["items"];
      if (it.is_array()) refuse("items", ptr + "/items", "an array of schemas (use prefixItems)");
      if (it.is_boolean())
        more = it.get<bool>();
      else
        item = sub(it, ptr + "/items", depth);
    }
    const int k = int(prefix.size());
    const int min = count_keyword(s, "minItems", ptr, 0);
    int max = count_keyword(s, "maxItems", ptr, Expr::kUnbounded);
    if (!more) max = max == Expr::kUnbounded ? k : std::min(max, k);
    if (max != Expr::kUnbounded && min > max) refuse("minItems", ptr + "/minItems", "no array can have this many items here");
    auto element = [&](int i) { return i < k ? prefix[size_t(i)] : item; };
    // Elements i, i+1, ...: each preceded by a separator.
    std::function<Expr(int)> tail = [&](int i) -> Expr {
      if (i == max) return empty_expr();
      if (i >= k && i >= min && max == Expr::kUnbounded) return star(seq({json_.sep(), item}));
      Expr next = seq({json_.sep(), element(i), tail(i + 1)});
      return i < min ? next : optional(std::move(next));
    };
    const Expr open = seq({byte_char('['), json_.ws()});
    if (max == 0) return seq({open, byte_char(']')});
    Expr elements = seq({element(0), tail(1), json_.ws()});
    return seq({open, min > 0 ? std::move(elements) : optional(std::move(elements)), byte_char(']')});
  }

  // A key of an additional property: [A-Za-z0-9_]+ but none of `names`.
  static Expr key_excluding(const std::vector<std::string>& names, bool root) {
    const std::vector<ByteRange> word = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
    auto is_word = [](char c) { return isalnum(uint8_t(c)) || c == '_'; };
    bool terminal = false;
    std::map<char, std::vector<std::string>> children;
    for (const auto& n : names) {
      if (n.empty())
        terminal = true;
      else if (is_word(n[0]))
        children[n[0]].push_back(n.substr(1));
    }
    std::vector<Expr> alts;
    std::vector<ByteRange> free;
    for (const auto& r : word)
      for (int c = r.lo; c <= r.hi; ++c)
        if (!children.contains(char(c))) free.push_back({uint8_t(c), uint8_t(c)});
    if (!free.empty()) alts.push_back(seq({bytes(free), star(bytes(word))}));
    for (const auto& [c, rest] : children) alts.push_back(seq({byte_char(uint8_t(c)), key_excluding(rest, false)}));
    if (!terminal && !root) alts.push_back(empty_expr());
    return alt(std::move(alts));
  }

  Expr object(const Json& s, const std::string& ptr, int depth) {
    struct Member {
      Expr expr;
      bool required;
    };
    std::vector<Member> members;
    std::vector<std::string> names;
    std::set<std::string> required;
    if (s.contains("required")) {
      const Json& r = s["required"];
      if (!r.is_array()) refuse("required", ptr + "/required", "must be an array of strings");
      for (const auto& name : r) {
        if (!name.is_string()) refuse("required", ptr + "/required", "must be an array of strings");
        if (name.get<std::string>().size() > kMaxPropertyName)
          refuse("required", ptr + "/required", "a property name over " + std::to_string(kMaxPropertyName) + " bytes");
        required.insert(name.get<std::string>());
      }
    }
    auto member = [&](const std::string& name, Expr value) {
      return seq({literal(Json(name).dump()), json_.ws(), byte_char(':'), json_.ws(), std::move(value)});
    };
    if (s.contains("properties")) {
      const Json& props = s["properties"];
      if (!props.is_object()) refuse("properties", ptr + "/properties", "must be an object of schemas");
      for (const auto& [name, schema] : props.items()) {
        if (name.size() > kMaxPropertyName)
          refuse("properties", ptr + "/properties", "a property name over " + std::to_string(kMaxPropertyName) + " bytes");
        names.push_back(name);
        members.push_back({member(name, sub(schema, ptr + "/properties/" + pointer_token(name), depth)),
                           required.contains(name)});
      }
    }
    // Required names without a schema: present, any value.
    if (s.contains("required"))
      for (const auto& name : s["required"])
        if (std::find(names.begin(), names.end(), name.get<std::string>()) == names.end()) {
          names.push_back(name.get<std::string>());
          members.push_back({member(name.get<std::string>(), json_.value()), true});
        }
    // Absent additionalProperties: none when properties are listed (as
    // xgrammar's strict mode; the output is still valid), any when none are
    // ({"type": "object"} is any object).
    std::optional<Expr> extra;
    if (!s.contains("additionalProperties") && !s.contains("properties")) extra = json_.value();
    if (s.contains("additionalProperties")) {
      const Json& a = s["additionalProperties"];
      if (a.is_boolean()) {
        if (a.get<bool>()) extra = json_.value();
      } else {
        extra = sub(a, ptr + "/additionalProperties", depth);
      }
    }
    std::optional<Expr> extra_member;
    if (extra)
      extra_member = seq({byte_char('"'), key_excluding(names, true), byte_char('"'), json_.ws(), byte_char(':'),
                          json_.ws(), *extra});
    // rest[i]: members i.. each after a separator, the required ones present;
    // as rules so that the object stays linear in its number of members.
    const size_t n = members.size();
    std::vector<int> rest(n + 1);
    for (size_t i = n + 1; i-- > 0;) {
      rest[i] = b_.declare(prefix_ + ptr + "/properties (after " + std::to_string(i) + ")");
      Expr body = i == n ? (extra_member ? star(seq({json_.sep(), *extra_member})) : empty_expr())
                         : seq({members[i].required ? seq({json_.sep(), members[i].expr})
                                                    : optional(seq({json_.sep(), members[i].expr})),
                                call(rest[i + 1])});
      b_.define(rest[i], body);
    }
    // The first member present is i (every member before it optional).
    std::vector<Expr> firsts;
    bool all_optional = true;
    for (size_t i = 0; i < n && all_optional; ++i) {
      firsts.push_back(seq({members[i].expr, call(rest[i + 1])}));
      all_optional = !members[i].required;
    }
    if (all_optional && extra_member) firsts.push_back(seq({*extra_member, call(rest[n])}));
    const Expr open = seq({byte_char('{'), json_.ws()});
    if (firsts.empty()) return seq({open, byte_char('}')});
    Expr body = seq({alt(std::move(firsts)), json_.ws()});
    return seq({open, all_optional ? optional(std::move(body)) : std::move(body), byte_char('}')});
  }
};

// The schema's JSON, checked against the size and nesting bounds.
Json parse_schema(std::string_view schema_text) {
  if (schema_text.size() > kMaxSchemaBytes)
    refuse("", "", "the schema text is over " + std::to_string(kMaxSchemaBytes) + " bytes (the bound of this server)");
  Json root;
  try {
    root = Json::parse(schema_text);
  } catch (const std::exception& e) {
    refuse("", "", std::string("not valid JSON: ") + e.what());
  }
  // Iteratively (dump() and the compiler recurse): a deep enum value or schema is refused first.
  std::vector<std::pair<const Json*, int>> stack{{&root, 1}};
  while (!stack.empty()) {
    const auto [v, depth] = stack.back();
    stack.pop_back();
    if (depth > kMaxJsonDepth)
      refuse("", "", "the schema's JSON nests deeper than " + std::to_string(kMaxJsonDepth) + " levels (the bound of this server)");
    if (v->is_structured())
      for (const auto& child : *v) stack.emplace_back(&child, depth + 1);
  }
  return root;
}

[[noreturn]] void refuse_too_large(const std::string& pointer) {
  refuse("", pointer, "the schema compiles to more than " + std::to_string(kMaxGrammarStates) + " states (the bound of this server)");
}

// The schema's rule in `b`; `last_pointer` (where the compiler was) names the
// place of a later GrammarTooLarge from finish().
int compile_into(GrammarBuilder& b, const JsonRules& json, std::string_view schema_text, const std::string& name_prefix,
                 std::string& last_pointer) {
  const Json root = parse_schema(schema_text);
  SchemaCompiler compiler(root, b, json, name_prefix);
  try {
    const int rule = compiler.compile();
    last_pointer = compiler.current_pointer();
    return rule;
  } catch (const GrammarTooLarge&) {
    refuse_too_large(compiler.current_pointer());
  }
}

}  // namespace

int json_schema_rule(GrammarBuilder& b, const JsonRules& json, std::string_view schema_text, const std::string& name_prefix) {
  std::string last_pointer;
  return compile_into(b, json, schema_text, name_prefix, last_pointer);
}

Grammar json_schema_grammar(std::string_view schema_text) {
  GrammarBuilder b(kMaxGrammarStates);
  const JsonRules json(b);
  std::string last_pointer;
  const int root = compile_into(b, json, schema_text, "", last_pointer);
  try {
    return b.finish(root);
  } catch (const GrammarTooLarge&) {
    refuse_too_large(last_pointer);
  } catch (const GrammarLeftRecursion& e) {
    refuse("$ref", e.rule == "#" ? "" : e.rule, "refers to itself without any JSON text between (infinite recursion)");
  } catch (const GrammarEmpty&) {
    refuse("", "", "no JSON value satisfies the schema");
  }
}

Grammar json_object_grammar() {
  GrammarBuilder b(kMaxGrammarStates);
  JsonRules json(b);
  const int root = b.add("json_object", json.any_object());
  return b.finish(root);
}

}  // namespace astrai::grammar
