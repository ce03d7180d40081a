// `x | name(args)`: jinja2's builtin filters (jinja2/filters.py) that chat
// templates use, with their semantics, plus transformers' tojson override.
// A jinja2 filter missing here is refused by name, never approximated.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include "engine/jinja/builtins.h"
#include "engine/jinja/json_value.h"
#include "engine/jinja/python_text.h"
#include "engine/jinja/render_limits.h"

namespace astrai::jinja {

namespace {

using FilterFn = Value (*)(const Value&, const CallArgs&);

const Value* opt(const CallArgs& a, size_t i, const std::string& name) { return a.get(i, name); }

const Value& required(const CallArgs& a, size_t i, const std::string& name, const char* filter) {
  const Value* v = a.get(i, name);
  if (!v) throw std::runtime_error(std::string("filter '") + filter + "' missing required argument '" + name + "'");
  return *v;
}

// soft_str: what str() gives, with Undefined as "".
std::string text(const Value& v) { return to_str(v); }

// jinja2's make_attrgetter: "a.b.0" looked up with getitem, part by part.
Value attribute_path(const Value& item, const std::string& path) {
  Value v = item;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool digits = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
    v = get_item(v, digits ? Value(int64_t(std::stoll(part))) : Value(part));
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

// The rest of the arguments after the first `skip` positional ones.
CallArgs rest(const CallArgs& a, size_t skip) {
  CallArgs r;
  for (size_t i = skip; i < a.positional.size(); ++i) r.positional.push_back(a.positional[i]);
  r.keyword = a.keyword;
  return r;
}

// select / reject / selectattr / rejectattr.
Value select(const Value& seq, const CallArgs& a, bool by_attribute, bool keep) {
  size_t next = 0;
  std::string attribute;
  if (by_attribute) {
    const Value* at = opt(a, 0, "attribute");
    if (!at || !at->is_string()) throw std::runtime_error("selectattr/rejectattr need an attribute name");
    attribute = at->as_string();
    next = 1;
  }
  std::optional<std::string> test;
  if (a.positional.size() > next) {
    if (!a.positional[next].is_string()) throw std::runtime_error("the test name must be a string");
    test = a.positional[next].as_string();
  }
  const CallArgs test_args = rest(a, next + 1);
  std::vector<Value> out;
  if (!truthy(seq)) return Value::iterator({}, "generator");  // jinja2: `if value:` before iterating
  for (const Value& item : iterate(seq)) {
    const Value v = by_attribute ? attribute_path(item, attribute) : item;
    const bool ok = test ? apply_test(*test, v, test_args) : truthy(v);
    if (ok == keep) out.push_back(item);
  }
  return Value::iterator(std::move(out), "generator");
}

Value map_filter(const Value& seq, const CallArgs& a) {
  std::vector<Value> out;
  if (!truthy(seq)) return Value::iterator({}, "generator");  // jinja2: `if value:` before iterating
  const Value* attribute = nullptr;
  for (const auto& [k, v] : a.keyword)
    if (k == "attribute") attribute = &v;
  if (attribute) {
    const Value* fallback = nullptr;
    for (const auto& [k, v] : a.keyword)
      if (k == "default") fallback = &v;
    for (const Value& item : iterate(seq)) {
      Value v = attribute_path(item, to_str(*attribute));
      out.push_back(v.is_undefined() && fallback ? *fallback : v);
    }
    return Value::iterator(std::move(out), "generator");
  }
  if (a.positional.empty() || !a.positional[0].is_string()) throw std::runtime_error("map needs a filter name or attribute=");
  const std::string name = a.positional[0].as_string();
  const CallArgs filter_args = rest(a, 1);
  for (const Value& item : iterate(seq)) out.push_back(apply_filter(name, item, filter_args));
  return Value::iterator(std::move(out), "generator");
}

constexpr size_t kMaxJsonIndent = 64;

Value tojson(const Value& v, const CallArgs& a) {
  // transformers: tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
  JsonDumpOptions o;
  if (const Value* e = opt(a, 0, "ensure_ascii")) o.ensure_ascii = truthy(*e);
  if (const Value* i = opt(a, 1, "indent"); i && !i->is_none()) {
    if (i->is_string()) o.indent = i->as_string();
    else if (i->is_int()) o.indent = std::string(size_t(std::clamp<int64_t>(i->as_int(), 0, kMaxJsonIndent + 1)), ' ');
    else throw std::runtime_error("tojson indent must be an int or a str");
    // Each nesting level repeats the indent on every line below it, so a wide
    // one multiplies the output by the depth; templates indent by 2 or 4.
    if (o.indent->size() > kMaxJsonIndent)
      throw std::runtime_error("tojson indent wider than " + std::to_string(kMaxJsonIndent) +
                               " is not supported by this Jinja engine");
  }
  if (const Value* s = opt(a, 2, "separators"); s && !s->is_none()) {
    if (!s->is_list() || s->as_list().items.size() != 2 || !s->as_list().items[0].is_string() ||
        !s->as_list().items[1].is_string())
      throw std::runtime_error("tojson separators must be a pair of strings");
    o.item_separator = s->as_list().items[0].as_string();
    o.key_separator = s->as_list().items[1].as_string();
  }
  if (const Value* k = opt(a, 3, "sort_keys")) o.sort_keys = truthy(*k);
  return Value(python_json_dumps(v, o));
}

Value indent(const Value& v, const CallArgs& a) {
  // jinja2's do_indent: the first line stays unless first=True; blank lines stay blank unless blank=True.
  if (!v.is_string()) throw std::runtime_error("unsupported operand type(s) for +=: '" + v.type_name() + "' and 'str'");
  std::string pad = "    ";
  if (const Value* w = opt(a, 0, "width")) {
    if (!w->is_string()) check_string_size(size_t(std::max<int64_t>(0, w->as_int())));
    pad = w->is_string() ? w->as_string() : std::string(size_t(std::max<int64_t>(0, w->as_int())), ' ');
  }
  const bool first = opt(a, 1, "first") && truthy(*opt(a, 1, "first"));
  const bool blank = opt(a, 2, "blank") && truthy(*opt(a, 2, "blank"));
  const Value lines_v = get_attribute(Value(text(v) + "\n"), "splitlines");
  std::vector<Value> lines = lines_v.as_callable().call({}).as_list().items;
  std::string out;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) {
      check_string_size(out.size() + 1 + pad.size() + lines[i].as_string().size());
      out += (i ? "\n" + pad : "") + lines[i].as_string();
    }
  } else {
    out = lines.empty() ? "" : lines[0].as_string();
    for (size_t i = 1; i < lines.size(); ++i) {
      check_string_size(out.size() + 1 + pad.size() + lines[i].as_string().size());
      out += '\n';
      if (!lines[i].as_string().empty()) out += pad + lines[i].as_string();
    }
  }
  return Value(first ? pad + out : out);
}

Value int_filter(const Value& v, const CallArgs& a) {
  const Value fallback = opt(a, 0, "default") ? *opt(a, 0, "default") : Value(int64_t(0));
  if (v.is_undefined()) throw std::runtime_error(v.undefined_description());  // int(Undefined) raises
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float()) return std::isfinite(v.as_double()) ? Value(int64_t(std::trunc(v.as_double()))) : fallback;
  if (v.is_string()) {
    const std::string s = py_strip(v.as_string(), std::nullopt, true, true);
    size_t used = 0;
    try {
      const long long i = std::stoll(s, &used, 10);
      if (used == s.size()) return Value(int64_t(i));
    } catch (const std::exception&) {
    }
    const std::optional<double> d = py_parse_float(s);  // int(float(value))
    if (d && std::isfinite(*d)) return Value(int64_t(std::trunc(*d)));
  }
  return fallback;
}

Value float_filter(const Value& v, const CallArgs& a) {
  const Value fallback = opt(a, 0, "default") ? *opt(a, 0, "default") : Value(0.0);
  if (v.is_undefined()) throw std::runtime_error(v.undefined_description());  // float(Undefined) raises
  if (v.is_number()) return Value(v.as_double());
  if (v.is_string()) {
    if (const std::optional<double> d = py_parse_float(py_strip(v.as_string(), std::nullopt, true, true))) return Value(*d);
  }
  return fallback;
}

const std::map<std::string, FilterFn>& filters() {
  static const std::map<std::string, FilterFn> table = {
      {"abs",
       [](const Value& v, const CallArgs&) {
         if (v.is_float()) return Value(std::fabs(v.as_double()));
         if (v.is_int() || v.is_bool()) return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
         throw std::runtime_error("bad operand type for abs(): '" + v.type_name() + "'");
       }},
      {"attr", [](const Value& v, const CallArgs& a) { return get_attribute(v, text(required(a, 0, "name", "attr"))); }},
      {"capitalize", [](const Value& v, const CallArgs&) { return Value(py_capitalize(text(v))); }},
      {"count", [](const Value& v, const CallArgs&) { return Value(length(v)); }},
      {"default",
       [](const Value& v, const CallArgs& a) {
         const Value* d = opt(a, 0, "default_value");
         const Value* boolean = opt(a, 1, "boolean");
         if (v.is_undefined() || (boolean && truthy(*boolean) && !truthy(v))) return d ? *d : Value("");
         return v;
       }},
      {"first",
       [](const Value& v, const CallArgs&) {
         const auto items = iterate(v);
         return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
       }},
      {"float", float_filter},
      {"indent", indent},
      {"int", int_filter},
      {"items",
       [](const Value& v, const CallArgs&) {
         // jinja2's do_items is a generator: it only raises for a non-mapping once iterated.
         if (v.is_undefined()) return Value::iterator({}, "generator");
         if (!v.is_dict())
           throw std::runtime_error("the items filter on a non-mapping (jinja2 raises only once it is iterated) is not supported by this Jinja engine");
         return Value::iterator(get_attribute(v, "items").as_callable().call({}).as_list().items, "generator");
       }},
      {"join",
       [](const Value& v, const CallArgs& a) {
         const std::string sep = opt(a, 0, "d") ? text(*opt(a, 0, "d")) : "";
         const Value* attribute = opt(a, 1, "attribute");
         std::string out;
         bool first = true;
         for (const Value& item : iterate(v)) {
           const std::string piece = text(attribute ? attribute_path(item, text(*attribute)) : item);
           check_string_size(out.size() + (first ? 0 : sep.size()) + piece.size());
           out += (first ? "" : sep) + piece;
           first = false;
         }
         return Value(out);
       }},
      {"last",
       [](const Value& v, const CallArgs&) {
         if (v.is_list() && v.as_list().one_shot()) throw std::runtime_error("'" + v.type_name() + "' object is not reversible");
         const auto items = iterate(v);
         return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
       }},
      {"length", [](const Value& v, const CallArgs&) { return Value(length(v)); }},
      {"list", [](const Value& v, const CallArgs&) { return Value::list(iterate(v)); }},
      {"lower", [](const Value& v, const CallArgs&) { return Value(py_lower(text(v))); }},
      {"map", map_filter},
      {"reject", [](const Value& v, const CallArgs& a) { return select(v, a, false, false); }},
      {"rejectattr", [](const Value& v, const CallArgs& a) { return select(v, a, true, false); }},
      {"replace",
       [](const Value& v, const CallArgs& a) {
         const Value* count = opt(a, 2, "count");
         return Value(py_replace(text(v), text(required(a, 0, "old", "replace")), text(required(a, 1, "new", "replace")),
                                 count && !count->is_none() ? count->as_int() : -1));
       }},
      {"reverse",
       [](const Value& v, const CallArgs&) {
         // do_reverse: value[::-1] for a str, else reversed(value): an iterator.
         if (v.is_string()) return Value(py_slice(v.as_string(), std::nullopt, std::nullopt, -1));
         if (v.is_undefined()) return Value::iterator({}, "reversed");
         if (v.is_list() && v.as_list().one_shot())
           throw std::runtime_error("reversing a " + v.type_name() + " (jinja2 copies it into a list) is not supported by this Jinja engine");
         if (!v.is_list() && !v.is_dict()) throw std::runtime_error("'" + v.type_name() + "' object is not reversible");
         auto items = iterate(v);
         const std::string type = v.is_dict() ? "dict_reversekeyiterator"
                                  : v.as_list().plain() && !v.as_list().is_tuple ? "list_reverseiterator"
                                  : v.as_list().view() ? v.as_list().iterator.substr(0, 5) + "reverse" + v.as_list().iterator.substr(5, v.as_list().iterator.size() - 6) + "iterator"
                                  : "reversed";
         return Value::iterator(std::vector<Value>(items.rbegin(), items.rend()), type);
       }},
      {"select", [](const Value& v, const CallArgs& a) { return select(v, a, false, true); }},
      {"selectattr", [](const Value& v, const CallArgs& a) { return select(v, a, true, true); }},
      {"string", [](const Value& v, const CallArgs&) { return Value(text(v)); }},
      {"title", [](const Value& v, const CallArgs&) { return Value(jinja_title(text(v))); }},
      {"tojson", tojson},
      {"trim",
       [](const Value& v, const CallArgs& a) {
         const Value* chars = opt(a, 0, "chars");
         return Value(py_strip(text(v), chars && !chars->is_none() ? std::optional<std::string>(text(*chars)) : std::nullopt,
                               true, true));
       }},
      {"upper", [](const Value& v, const CallArgs&) { return Value(py_upper(text(v))); }},
  };
  return table;
}

}  // namespace

// The parameters after the input, in order, as jinja2 declares them (Python
// raises TypeError for more positional arguments or an unknown keyword).
// Filters taking *args (map, select...) are not listed.
void check_signature(const std::string& name, const CallArgs& a) {
  static const std::map<std::string, std::vector<std::string>> signatures = {
      {"abs", {}}, {"attr", {"name"}}, {"capitalize", {}}, {"count", {}},
      {"default", {"default_value", "boolean"}}, {"first", {}}, {"float", {"default"}},
      {"indent", {"width", "first", "blank"}}, {"int", {"default", "base"}}, {"items", {}},
      {"join", {"d", "attribute"}}, {"last", {}}, {"length", {}}, {"list", {}}, {"lower", {}},
      {"replace", {"old", "new", "count"}}, {"reverse", {}}, {"string", {}}, {"title", {}},
      {"tojson", {"ensure_ascii", "indent", "separators", "sort_keys"}}, {"trim", {"chars"}}, {"upper", {}}};
  const auto it = signatures.find(name);
  if (it == signatures.end()) return;
  const auto& params = it->second;
  if (a.positional.size() > params.size())
    throw std::runtime_error("filter '" + name + "' takes at most " + std::to_string(params.size()) + " argument(s), " +
                             std::to_string(a.positional.size()) + " given");
  for (const auto& [k, v] : a.keyword) {
    const auto p = std::find(params.begin(), params.end(), k);
    if (p == params.end()) throw std::runtime_error("filter '" + name + "' got an unexpected keyword argument '" + k + "'");
    if (size_t(p - params.begin()) < a.positional.size())
      throw std::runtime_error("filter '" + name + "' got multiple values for argument '" + k + "'");
  }
}

bool is_jinja2_filter(const std::string& name) {
  static const std::set<std::string> names = {
      "abs", "attr", "batch", "capitalize", "center", "count", "d", "default", "dictsort", "e", "escape",
      "filesizeformat", "first", "float", "forceescape", "format", "groupby", "indent", "int", "items", "join",
      "last", "length", "list", "lower", "map", "max", "min", "pprint", "random", "reject", "rejectattr", "replace",
      "reverse", "round", "safe", "select", "selectattr", "slice", "sort", "string", "striptags", "sum", "title",
      "tojson", "trim", "truncate", "unique", "upper", "urlencode", "urlize", "wordcount", "wordwrap", "xmlattr"};
  return names.count(name) > 0;
}

bool has_filter(const std::string& name) { return filters().count(name) || name == "d"; }

Value apply_filter(const std::string& name, const Value& input, const CallArgs& args) {
  const std::string n = name == "d" ? "default" : name;
  const auto it = filters().find(n);
  if (it == filters().end()) throw std::runtime_error("the filter '" + name + "' is not supported by this Jinja engine");
  check_signature(n, args);
  return it->second(input, args);
}

}  // namespace astrai::jinja
