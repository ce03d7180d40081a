// Attribute and item access, and the methods of str, dict and list that
// templates call (see builtins.h). Mutating methods (list.append, dict.update,
// ...) exist but raise, as ImmutableSandboxedEnvironment makes them.
#include <unicode/uchar.h>

#include <set>
#include <stdexcept>

#include "engine/jinja/builtins.h"
#include "engine/jinja/python_text.h"
#include "engine/jinja/render_limits.h"

namespace astrai::jinja {

namespace {

[[noreturn]] void undefined_error(const Value& v) { throw std::runtime_error(v.undefined_description()); }

const std::string& string_arg(const CallArgs& a, size_t i, const std::string& name, const std::string& method) {
  const Value* v = a.get(i, name);
  if (!v) throw std::runtime_error(method + "() missing required argument '" + name + "'");
  if (v->is_undefined()) undefined_error(*v);
  if (!v->is_string()) throw std::runtime_error(method + "() argument must be str, not " + v->type_name());
  return v->as_string();
}

std::optional<std::string> optional_string_arg(const CallArgs& a, size_t i, const std::string& name,
                                               const std::string& method) {
  const Value* v = a.get(i, name);
  if (!v || v->is_none()) return std::nullopt;
  return string_arg(a, i, name, method);
}

int64_t int_arg(const CallArgs& a, size_t i, const std::string& name, int64_t fallback, const std::string& method) {
  const Value* v = a.get(i, name);
  if (!v) return fallback;
  if (v->is_undefined()) undefined_error(*v);
  if (!v->is_int() && !v->is_bool())
    throw std::runtime_error(method + "() argument '" + name + "' must be int, not " + v->type_name());
  return v->as_int();
}

void max_args(const CallArgs& a, size_t n, const std::string& method) {
  if (a.positional.size() + a.keyword.size() > n)
    throw std::runtime_error(method + "() takes at most " + std::to_string(n) + " argument(s)");
}

// Code point index of a byte offset.
int64_t cp_index(const std::string& s, size_t byte) { return py_len(std::string_view(s).substr(0, byte)); }

// str.startswith / endswith with a str or a tuple of str, and optional start/end.
Value starts_or_ends(const std::string& s, const CallArgs& a, bool start, const std::string& method) {
  const Value* p = a.get(0, "prefix");
  if (!p) throw std::runtime_error(method + "() takes at least 1 argument (0 given)");
  const Value* b = a.get(1, "start");
  const Value* e = a.get(2, "end");
  std::string sub = s;
  if (b || e) {
    auto bound = [](const Value* v) -> std::optional<int64_t> {
      if (!v || v->is_none()) return std::nullopt;
      return v->as_int();
    };
    sub = py_slice(s, bound(b), bound(e), std::nullopt);
  }
  auto test = [&](const Value& x) {
    if (!x.is_string()) throw std::runtime_error(method + " first arg must be str or a tuple of str, not " + x.type_name());
    const std::string& q = x.as_string();
    if (q.size() > sub.size()) return false;
    return start ? sub.compare(0, q.size(), q) == 0 : sub.compare(sub.size() - q.size(), q.size(), q) == 0;
  };
  if (p->is_list() && p->as_list().is_tuple) {
    for (const Value& x : p->as_list().items)
      if (test(x)) return Value(true);
    return Value(false);
  }
  return Value(test(*p));
}

bool all_chars(const std::string& s, bool (*pred)(char32_t)) {
  const std::u32string u = decode_utf8(s);
  if (u.empty()) return false;
  for (const char32_t c : u)
    if (!pred(c)) return false;
  return true;
}

bool is_alpha(char32_t c) { return u_isalpha(UChar32(c)); }
bool is_digit(char32_t c) {
  const int t = u_getIntPropertyValue(UChar32(c), UCHAR_NUMERIC_TYPE);
  return t == U_NT_DECIMAL || t == U_NT_DIGIT;
}
bool is_alnum(char32_t c) { return is_alpha(c) || u_getIntPropertyValue(UChar32(c), UCHAR_NUMERIC_TYPE) != U_NT_NONE; }

// str.islower / isupper: at least one cased character, and none of the other case.
bool case_test(const std::string& s, bool lower) {
  bool cased = false;
  for (const char32_t c : decode_utf8(s)) {
    if (u_isupper(UChar32(c)) || u_istitle(UChar32(c))) {
      if (lower) return false;
      cased = true;
    } else if (u_islower(UChar32(c))) {
      if (!lower) return false;
      cased = true;
    }
  }
  return cased;
}

std::vector<std::string> split_lines(const std::string& s) {
  // str.splitlines(): \n \r \r\n \v \f \x1c \x1d \x1e \x85 \u2028 \u2029 end lines.
  std::vector<std::string> out;
  const std::u32string u = decode_utf8(s);
  std::u32string line;
  for (size_t i = 0; i < u.size(); ++i) {
    const char32_t c = u[i];
    const bool br = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
                    c == 0x85 || c == 0x2028 || c == 0x2029;
    if (!br) {
      line += c;
      continue;
    }
    if (c == '\r' && i + 1 < u.size() && u[i + 1] == '\n') ++i;
    out.push_back(encode_utf8(line));
    line.clear();
  }
  if (!line.empty()) out.push_back(encode_utf8(line));
  return out;
}

Value string_list(const std::vector<std::string>& parts) {
  std::vector<Value> items;
  for (const auto& p : parts) items.emplace_back(p);
  return Value::list(std::move(items));
}

Value string_method(const std::string& s, const std::string& name, const CallArgs& a) {
  const std::string m = "str." + name;
  if (name == "startswith") return starts_or_ends(s, a, true, m);
  if (name == "endswith") return starts_or_ends(s, a, false, m);
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    max_args(a, 1, m);
    return Value(py_strip(s, optional_string_arg(a, 0, "chars", m), name != "rstrip", name != "lstrip"));
  }
  if (name == "split") {
    max_args(a, 2, m);
    try {
      return string_list(py_split(s, optional_string_arg(a, 0, "sep", m), int_arg(a, 1, "maxsplit", -1, m)));
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(std::string("str.split: ") + e.what());
    }
  }
  if (name == "splitlines") return string_list(split_lines(s));
  if (name == "replace") {
    max_args(a, 3, m);
    return Value(py_replace(s, string_arg(a, 0, "old", m), string_arg(a, 1, "new", m), int_arg(a, 2, "count", -1, m)));
  }
  if (name == "upper") return Value(py_upper(s));
  if (name == "lower") return Value(py_lower(s));
  if (name == "title") return Value(py_str_title(s));
  if (name == "capitalize") return Value(py_capitalize(s));
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    max_args(a, 1, m);
    const std::string& sub = string_arg(a, 0, "sub", m);
    const size_t at = name[0] == 'r' ? s.rfind(sub) : s.find(sub);
    if (at == std::string::npos) {
      if (name.find("index") != std::string::npos) throw std::runtime_error("substring not found");
      return Value(int64_t(-1));
    }
    return Value(cp_index(s, at));
  }
  if (name == "count") {
    max_args(a, 1, m);
    const std::string& sub = string_arg(a, 0, "sub", m);
    if (sub.empty()) return Value(py_len(s) + 1);
    int64_t n = 0;
    for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
    return Value(n);
  }
  if (name == "join") {
    const Value* it = a.get(0, "iterable");
    if (!it) throw std::runtime_error("str.join() takes exactly one argument (0 given)");
    std::string out;
    bool first = true;
    for (const Value& x : iterate(*it)) {
      if (!x.is_string())
        throw std::runtime_error("sequence item: expected str instance, " + x.type_name() + " found");
      check_string_size(out.size() + (first ? 0 : s.size()) + x.as_string().size());
      out += (first ? "" : s) + x.as_string();
      first = false;
    }
    return Value(out);
  }
  if (name == "removeprefix" || name == "removesuffix") {
    const std::string& x = string_arg(a, 0, name == "removeprefix" ? "prefix" : "suffix", m);
    if (name == "removeprefix" && s.compare(0, x.size(), x) == 0) return Value(s.substr(x.size()));
    if (name == "removesuffix" && !x.empty() && s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0)
      return Value(s.substr(0, s.size() - x.size()));
    return Value(s);
  }
  if (name == "isdigit") return Value(all_chars(s, is_digit));
  if (name == "isalpha") return Value(all_chars(s, is_alpha));
  if (name == "isalnum") return Value(all_chars(s, is_alnum));
  if (name == "isspace") return Value(all_chars(s, py_isspace));
  if (name == "islower") return Value(case_test(s, true));
  if (name == "isupper") return Value(case_test(s, false));
  throw std::runtime_error("str." + name + "() is not supported by this Jinja engine");
}

const std::set<std::string>& string_methods() {
  static const std::set<std::string> names = {
      "startswith", "endswith", "strip", "lstrip", "rstrip", "split", "splitlines", "replace", "upper", "lower",
      "title", "capitalize", "find", "rfind", "index", "rindex", "count", "join", "removeprefix", "removesuffix",
      "isdigit", "isalpha", "isalnum", "isspace", "islower", "isupper",
      // Python has these; calling them is refused by name rather than misread.
      "format", "format_map", "rsplit", "partition", "rpartition", "center", "ljust", "rjust", "zfill", "swapcase",
      "casefold", "expandtabs", "encode", "isdecimal", "isnumeric", "istitle", "isidentifier", "isprintable",
      "isascii", "translate", "maketrans"};
  return names;
}

Value dict_method(const Value& self, const std::string& name, const CallArgs& a) {
  const DictObject& d = self.as_dict();
  if (name == "items") {
    std::vector<Value> pairs;
    for (const auto& [k, v] : d.items) pairs.push_back(Value::list({Value(k), v}, true));
    return Value::iterator(std::move(pairs), "dict_items");
  }
  if (name == "keys") {
    std::vector<Value> keys;
    for (const auto& [k, v] : d.items) keys.emplace_back(k);
    return Value::iterator(std::move(keys), "dict_keys");
  }
  if (name == "values") {
    std::vector<Value> values;
    for (const auto& [k, v] : d.items) values.push_back(v);
    return Value::iterator(std::move(values), "dict_values");
  }
  if (name == "get") {
    const Value* key = a.get(0, "key");
    if (!key) throw std::runtime_error("get expected at least 1 argument, got 0");
    const Value* fallback = a.get(1, "default");
    if (key->is_string())
      if (const Value* v = d.find(key->as_string())) return *v;
    return fallback ? *fallback : Value::none();
  }
  if (name == "copy") return Value::dict(d);
  throw std::runtime_error("dict." + name + "() modifies the dict, which the sandbox (ImmutableSandboxedEnvironment) forbids");
}

const std::set<std::string>& dict_methods() {
  static const std::set<std::string> names = {"items", "keys", "values", "get", "copy", "pop", "popitem",
                                              "update", "clear", "setdefault"};
  return names;
}

Value list_method(const Value& self, const std::string& name, const CallArgs& a) {
  const auto& items = self.as_list().items;
  if (name == "index" || name == "count") {
    const Value* x = a.get(0, "value");
    if (!x) throw std::runtime_error(name + "() takes exactly one argument (0 given)");
    int64_t n = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!equals(items[i], *x)) continue;
      if (name == "index") return Value(int64_t(i));
      ++n;
    }
    if (name == "index") throw std::runtime_error(to_repr(*x) + " is not in list");
    return Value(n);
  }
  throw std::runtime_error("list." + name + "() modifies the list, which the sandbox (ImmutableSandboxedEnvironment) forbids");
}

const std::set<std::string>& list_methods() {
  static const std::set<std::string> names = {"index", "count", "append", "extend", "insert", "pop",
                                              "remove", "clear", "sort", "reverse"};
  return names;
}

Value bound(const Value& self, const std::string& name, Value (*method)(const Value&, const std::string&, const CallArgs&)) {
  return Value::callable(self.type_name() + "." + name, [self, name, method](const CallArgs& a) { return method(self, name, a); });
}

Value string_method_entry(const Value& self, const std::string& name, const CallArgs& a) {
  return string_method(self.as_string(), name, a);
}

std::string object_name(const Value& obj) {
  if (obj.is_none()) return "None";
  std::string name = "'";
  name += obj.type_name();
  return name + " object'";
}

}  // namespace

Value get_attribute(const Value& obj, const std::string& name) {
  switch (obj.kind()) {
    case Value::Kind::Undefined: undefined_error(obj);
    case Value::Kind::String:
      if (string_methods().count(name)) return bound(obj, name, string_method_entry);
      break;
    case Value::Kind::Dict:
      if (dict_methods().count(name)) return bound(obj, name, dict_method);
      if (const Value* v = obj.as_dict().find(name)) return *v;
      break;
    case Value::Kind::List:
      if (!obj.as_list().plain()) break;
      if (!obj.as_list().is_tuple && list_methods().count(name)) return bound(obj, name, list_method);
      if (obj.as_list().is_tuple && (name == "index" || name == "count")) return bound(obj, name, list_method);
      break;
    case Value::Kind::Namespace:
      if (const Value* v = obj.as_namespace().attrs.find(name)) return *v;
      break;
    default: break;
  }
  return Value::undefined(object_name(obj) + " has no attribute '" + name + "'");
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) undefined_error(obj);
  if (key.is_undefined() && !obj.is_dict()) return Value::undefined(object_name(obj) + " has no element Undefined");
  if (obj.is_dict() && key.is_string()) {
    if (const Value* v = obj.as_dict().find(key.as_string())) return *v;
  } else if (((obj.is_list() && obj.as_list().plain()) || obj.is_string()) && (key.is_int() || key.is_bool())) {
    int64_t i = key.as_int();
    if (obj.is_list()) {
      const auto& items = obj.as_list().items;
      if (i < 0) i += int64_t(items.size());
      if (i >= 0 && i < int64_t(items.size())) return items[size_t(i)];
    } else {
      const std::u32string u = decode_utf8(obj.as_string());
      if (i < 0) i += int64_t(u.size());
      if (i >= 0 && i < int64_t(u.size())) return Value(encode_utf8(u[size_t(i)]));
    }
    return Value::undefined(object_name(obj) + " has no element " + std::to_string(key.as_int()));
  }
  // jinja2 falls back to getattr for string keys (d['items'] is the method when
  // there is no such key).
  if (key.is_string()) return get_attribute(obj, key.as_string());
  return Value::undefined(object_name(obj) + " has no element " + to_repr(key));
}

}  // namespace astrai::jinja
