// `x is name(args)`: jinja2's builtin tests (jinja2/tests.py), same meanings.
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include "engine/jinja/builtins.h"
#include "engine/jinja/python_text.h"

namespace astrai::jinja {

namespace {

using TestFn = bool (*)(const Value&, const CallArgs&);

const Value& arg(const CallArgs& a, const std::string& test) {
  const Value* v = a.get(0, "other");
  if (!v) throw std::runtime_error("test '" + test + "' takes one argument");
  return *v;
}

// Python's value % divisor on numbers (ints, bools, floats; the result takes
// the divisor's sign); Undefined and other types raise.
double py_mod(const Value& v, const Value& divisor, const std::string& test) {
  for (const Value* x : {&v, &divisor}) {
    if (x->is_undefined()) throw std::runtime_error(x->undefined_description());
    if (!x->is_number()) throw std::runtime_error("test '" + test + "' needs numbers, got " + x->type_name());
  }
  if (divisor.as_double() == 0) throw std::runtime_error("integer division or modulo by zero");
  if (!v.is_float() && !divisor.is_float()) {
    const int64_t m = v.as_int() % divisor.as_int();
    return double(m != 0 && ((m < 0) != (divisor.as_int() < 0)) ? m + divisor.as_int() : m);
  }
  double m = std::fmod(v.as_double(), divisor.as_double());
  if (m != 0 && ((m < 0) != (divisor.as_double() < 0))) m += divisor.as_double();
  return m;
}

bool in_test(const Value& item, const Value& container) {
  switch (container.kind()) {
    case Value::Kind::String:
      if (!item.is_string()) throw std::runtime_error("'in <string>' requires string as left operand, not " + item.type_name());
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::Dict:
      if ((item.is_list() && !item.as_list().is_tuple) || item.is_dict())
        throw std::runtime_error("unhashable type: '" + item.type_name() + "'");
      return item.is_string() && container.as_dict().find(item.as_string()) != nullptr;
    case Value::Kind::List:
      for (const Value& x : container.as_list().items)
        if (equals(x, item)) return true;
      return false;
    case Value::Kind::Undefined: return false;
    default: throw std::runtime_error("argument of type '" + container.type_name() + "' is not iterable");
  }
}

const std::map<std::string, TestFn>& tests() {
  static const std::map<std::string, TestFn> table = {
      {"defined", [](const Value& v, const CallArgs&) { return !v.is_undefined(); }},
      {"undefined", [](const Value& v, const CallArgs&) { return v.is_undefined(); }},
      {"none", [](const Value& v, const CallArgs&) { return v.is_none(); }},
      {"boolean", [](const Value& v, const CallArgs&) { return v.is_bool(); }},
      {"true", [](const Value& v, const CallArgs&) { return v.is_bool() && v.as_bool(); }},
      {"false", [](const Value& v, const CallArgs&) { return v.is_bool() && !v.as_bool(); }},
      {"integer", [](const Value& v, const CallArgs&) { return v.is_int(); }},
      {"float", [](const Value& v, const CallArgs&) { return v.is_float(); }},
      {"number", [](const Value& v, const CallArgs&) { return v.is_number(); }},
      {"string", [](const Value& v, const CallArgs&) { return v.is_string(); }},
      {"mapping", [](const Value& v, const CallArgs&) { return v.is_dict(); }},
      // iter() works on str, list, dict and Undefined (empty).
      {"iterable", [](const Value& v, const CallArgs&) { return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined(); }},
      // len() and __getitem__: str, list, tuple, dict, and Undefined (which has both);
      // not iterators (no len) nor dict views (no __getitem__).
      {"sequence",
       [](const Value& v, const CallArgs&) {
         return v.is_string() || (v.is_list() && v.as_list().plain()) || v.is_dict() || v.is_undefined();
       }},
      // Undefined has a __call__ (that raises), so callable() is true for it.
      {"callable", [](const Value& v, const CallArgs&) { return v.is_callable() || v.is_undefined(); }},
      {"odd", [](const Value& v, const CallArgs&) { return py_mod(v, Value(int64_t(2)), "odd") == 1; }},
      {"even", [](const Value& v, const CallArgs&) { return py_mod(v, Value(int64_t(2)), "even") == 0; }},
      {"divisibleby", [](const Value& v, const CallArgs& a) { return py_mod(v, arg(a, "divisibleby"), "divisibleby") == 0; }},
      {"eq", [](const Value& v, const CallArgs& a) { return equals(v, arg(a, "eq")); }},
      {"ne", [](const Value& v, const CallArgs& a) { return !equals(v, arg(a, "ne")); }},
      {"lt", [](const Value& v, const CallArgs& a) { return less_than(v, arg(a, "lt")); }},
      {"le", [](const Value& v, const CallArgs& a) { return !less_than(arg(a, "le"), v); }},
      {"gt", [](const Value& v, const CallArgs& a) { return less_than(arg(a, "gt"), v); }},
      {"ge", [](const Value& v, const CallArgs& a) { return !less_than(v, arg(a, "ge")); }},
      {"in", [](const Value& v, const CallArgs& a) { return in_test(v, arg(a, "in")); }},
      {"lower", [](const Value& v, const CallArgs&) { return to_str(v) == py_lower(to_str(v)) && to_str(v) != py_upper(to_str(v)); }},
      {"upper", [](const Value& v, const CallArgs&) { return to_str(v) == py_upper(to_str(v)) && to_str(v) != py_lower(to_str(v)); }},
      {"sameas",
       [](const Value& v, const CallArgs& a) {
         const Value& o = arg(a, "sameas");
         if (v.kind() != o.kind()) return false;
         if (v.is_none() || v.is_undefined()) return v.is_none();
         if (v.is_bool() || v.is_int()) return v.as_int() == o.as_int();
         if (v.is_list()) return &v.as_list() == &o.as_list();
         if (v.is_dict()) return &v.as_dict() == &o.as_dict();
         return equals(v, o);
       }},
      {"escaped", [](const Value&, const CallArgs&) { return false; }},
      {"filter", [](const Value& v, const CallArgs&) { return v.is_string() && has_filter(v.as_string()); }},
      {"test", [](const Value& v, const CallArgs&) { return v.is_string() && has_test(v.as_string()); }},
  };
  return table;
}

const std::map<std::string, std::string>& aliases() {
  static const std::map<std::string, std::string> a = {{"==", "eq"}, {"equalto", "eq"}, {"!=", "ne"},
                                                       {"<", "lt"},  {"lessthan", "lt"}, {"<=", "le"},
                                                       {">", "gt"},  {"greaterthan", "gt"}, {">=", "ge"}};
  return a;
}

}  // namespace

bool is_jinja2_test(const std::string& name) {
  static const std::set<std::string> names = {
      "boolean", "callable", "defined", "divisibleby", "eq", "equalto", "escaped", "even", "false", "filter", "float",
      "ge", "greaterthan", "gt", "in", "integer", "iterable", "le", "lessthan", "lower", "lt", "mapping", "ne", "none",
      "number", "odd", "sameas", "sequence", "string", "test", "true", "undefined", "upper", "==", "!=", "<", "<=",
      ">", ">="};
  return names.count(name) > 0;
}

bool has_test(const std::string& name) { return tests().count(name) || aliases().count(name); }

bool apply_test(const std::string& name, const Value& input, const CallArgs& args) {
  const auto alias = aliases().find(name);
  const std::string canonical = alias == aliases().end() ? name : alias->second;
  const auto it = tests().find(canonical);
  if (it == tests().end()) throw std::runtime_error("no test named '" + name + "' in this Jinja engine");
  // Python checks the call: these take the value and one argument, the rest the value only.
  static const std::set<std::string> one_argument = {"divisibleby", "eq", "ne", "lt", "le", "gt", "ge", "in", "sameas"};
  const size_t given = args.positional.size() + args.keyword.size();
  const size_t wanted = one_argument.count(canonical) ? 1 : 0;
  if (given != wanted)
    throw std::runtime_error("test '" + name + "' takes " + std::to_string(wanted) + " argument(s), " +
                             std::to_string(given) + " given");
  return it->second(input, args);
}

}  // namespace astrai::jinja
