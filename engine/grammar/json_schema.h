// JSON Schema (the subset in docs/structured-outputs.md) -> Grammar over the
// bytes of a JSON text; also the grammar of any JSON object (json_object).
#pragma once

#include <string_view>

#include "engine/grammar/grammar.h"
#include "engine/grammar/json_rules.h"

namespace astrai::grammar {

// Bounds: the schema text, its nesting, and the compiled grammar's size.
inline constexpr size_t kMaxSchemaBytes = 1 << 20;
inline constexpr int kMaxSchemaDepth = 64;
inline constexpr size_t kMaxGrammarStates = 200000;
// Nesting of the schema's JSON text itself (enum and const values included).
inline constexpr int kMaxJsonDepth = 256;
// A property name's length (the grammar of extra names excluding the listed
// ones nests one level per byte).
inline constexpr size_t kMaxPropertyName = 1000;
// Whitespace between JSON tokens: at most this many of ' ', '\n', '\t', '\r'.
inline constexpr int kMaxWhitespace = 20;

// Throws ConstraintError (keyword + JSON pointer) for anything outside the subset.
Grammar json_schema_grammar(std::string_view schema_text);
Grammar json_object_grammar();

// One schema compiled into `b` beside other rules (a tool-call grammar holds
// one schema per tool): returns its rule. Rule names start with `name_prefix`
// (dumps and left-recursion errors name them). Throws ConstraintError as
// json_schema_grammar; the caller's finish() may still throw the grammar.h errors.
int json_schema_rule(GrammarBuilder& b, const JsonRules& json, std::string_view schema_text, const std::string& name_prefix);

}  // namespace astrai::grammar
