// Between JSON and template values: the render context arrives as JSON, and
// the tojson filter is Hugging Face's override of jinja2's (transformers'
// chat_template_utils.py): json.dumps(x, ensure_ascii=False, indent=indent,
// separators=separators, sort_keys=sort_keys), which this reproduces byte for
// byte (Python's separators, float repr, escapes, raw non-ASCII text).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "engine/jinja/value.h"

namespace astrai::jinja {

// Objects keep their key order (ordered_json), as Python's json.loads does.
Value from_json(const nlohmann::ordered_json& j);

struct JsonDumpOptions {
  std::optional<std::string> indent;  // json.dumps indent, as the string put per level (int n = n spaces)
  std::optional<std::string> item_separator;  // default ", " (or "," with an indent)
  std::optional<std::string> key_separator;   // default ": "
  bool sort_keys = false;
  bool ensure_ascii = false;  // HF's default; true escapes non-ASCII as \uXXXX (surrogate pairs above U+FFFF)
};

// json.dumps(v, ensure_ascii=False, ...). Throws std::runtime_error for values
// JSON cannot hold (Undefined, namespaces, callables), as Python's TypeError.
std::string python_json_dumps(const Value& v, const JsonDumpOptions& options = {});

}  // namespace astrai::jinja
