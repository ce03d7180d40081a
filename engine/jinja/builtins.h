// What templates can call, each family in its own file, with jinja2's (and
// Python's) semantics:
//   filters.cpp  `x | name(args)`: trim, length, tojson, default, join, ...
//   tests.cpp    `x is name(args)`: defined, none, string, mapping, ...
//   methods.cpp  `x.name`, `x[key]` and the methods they bind: str.strip,
//                str.split, dict.items, dict.get, ...
//   globals.cpp  raise_exception, strftime_now, namespace, range, dict.
// Errors are std::runtime_error with Python's message; the renderer adds the
// template line.
#pragma once

#include <string>

#include "engine/jinja/value.h"

namespace astrai::jinja {

// Throws std::runtime_error for a filter this engine does not have.
Value apply_filter(const std::string& name, const Value& input, const CallArgs& args);
// Throws std::runtime_error for a test this engine does not have.
bool apply_test(const std::string& name, const Value& input, const CallArgs& args);
bool has_filter(const std::string& name);
bool has_test(const std::string& name);
// Whether jinja2 itself has a filter / test of that name: jinja2 refuses a
// template naming any other when it compiles it, executed or not.
bool is_jinja2_filter(const std::string& name);
bool is_jinja2_test(const std::string& name);

// jinja2's environment.getattr (obj.name) and getitem (obj[key]) under the
// immutable sandbox: a missing key, attribute or index gives Undefined,
// methods come back bound, mutating methods raise when called.
Value get_attribute(const Value& obj, const std::string& name);
Value get_item(const Value& obj, const Value& key);

// The globals transformers' environment provides, plus jinja2's defaults.
const DictObject& template_globals();

}  // namespace astrai::jinja
