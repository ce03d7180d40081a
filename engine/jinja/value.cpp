// Python semantics of the template values (see value.h).
#include "engine/jinja/value.h"

#include <algorithm>
#include <stdexcept>

#include "engine/jinja/python_text.h"

namespace astrai::jinja {

const Value* DictObject::find(const std::string& key) const {
  for (const auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

void DictObject::set(const std::string& key, Value value) {
  for (auto& [k, v] : items) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(key, std::move(value));
}

const Value* CallArgs::get(size_t index, const std::string& name) const {
  if (index < positional.size()) return &positional[index];
  for (const auto& [k, v] : keyword)
    if (k == name) return &v;
  return nullptr;
}

namespace {

// Depth and namespace content of a container holding `items` (see
// kMaxValueDepth). A namespace counts as one level: its attributes never hold
// a namespace (set_namespace_attribute), so walks through it stay bounded.
template <class Items, class Get>
void measure(const Items& items, Get get, int& depth, bool& holds_namespace) {
  int deepest = 0;
  for (const auto& item : items) {
    const Value& v = get(item);
    if (v.is_list()) {
      deepest = std::max(deepest, v.as_list().depth);
      holds_namespace = holds_namespace || v.as_list().holds_namespace;
    } else if (v.is_dict()) {
      deepest = std::max(deepest, v.as_dict().depth);
      holds_namespace = holds_namespace || v.as_dict().holds_namespace;
    } else if (v.is_namespace()) {
      deepest = std::max(deepest, 1);
      holds_namespace = true;
    }
  }
  depth = deepest + 1;
  if (depth > kMaxValueDepth)
    throw std::runtime_error("lists and dicts nest deeper than " + std::to_string(kMaxValueDepth) +
                             " levels in this Jinja engine (a list wrapped around itself in a loop?)");
}

void measure_list(ListObject& l) {
  measure(l.items, [](const Value& v) -> const Value& { return v; }, l.depth, l.holds_namespace);
}

bool holds_namespace(const Value& v) {
  return v.is_namespace() || (v.is_list() && v.as_list().holds_namespace) ||
         (v.is_dict() && v.as_dict().holds_namespace);
}

void refuse_namespace_in_namespace(const Value& v) {
  // A namespace inside a namespace can be the namespace itself: a cycle that
  // reference counting never frees and that every walk would follow forever.
  if (holds_namespace(v))
    throw std::runtime_error("a namespace (or a list or dict holding one) as a namespace attribute is not supported "
                             "by this Jinja engine");
}

}  // namespace

void set_namespace_attribute(NamespaceObject& ns, const std::string& name, Value value) {
  refuse_namespace_in_namespace(value);
  ns.attrs.set(name, std::move(value));
}

Value Value::list(std::vector<Value> items, bool tuple) {
  auto l = std::make_shared<ListObject>();
  l->items = std::move(items);
  l->is_tuple = tuple;
  measure_list(*l);
  Value v;
  v.v_ = std::move(l);
  return v;
}

Value Value::iterator(std::vector<Value> items, std::string type) {
  auto l = std::make_shared<ListObject>();
  l->items = std::move(items);
  l->iterator = std::move(type);
  measure_list(*l);
  Value v;
  v.v_ = std::move(l);
  return v;
}

Value Value::dict(DictObject d) {
  d.holds_namespace = false;
  measure(d.items, [](const auto& item) -> const Value& { return item.second; }, d.depth, d.holds_namespace);
  Value v;
  v.v_ = std::make_shared<DictObject>(std::move(d));
  return v;
}

Value Value::namespace_object(DictObject attrs) {
  for (const auto& [name, value] : attrs.items) refuse_namespace_in_namespace(value);
  Value v;
  v.v_ = std::make_shared<NamespaceObject>(NamespaceObject{std::move(attrs)});
  return v;
}

Value Value::callable(std::string name, std::function<Value(const CallArgs&)> fn) {
  Value v;
  v.v_ = std::make_shared<CallableObject>(CallableObject{std::move(name), std::move(fn)});
  return v;
}

std::string Value::type_name() const {
  switch (kind()) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::List: return !as_list().plain() ? as_list().iterator : as_list().is_tuple ? "tuple" : "list";
    case Kind::Dict: return "dict";
    case Kind::Namespace: return "Namespace";
    case Kind::Callable: return "function";
  }
  return "?";
}

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return false;
    case Value::Kind::Bool: return v.as_bool();
    case Value::Kind::Int: return v.as_int() != 0;
    case Value::Kind::Float: return v.as_double() != 0.0;
    case Value::Kind::String: return !v.as_string().empty();
    case Value::Kind::List: return v.as_list().one_shot() || !v.as_list().items.empty();
    case Value::Kind::Dict: return !v.as_dict().items.empty();
    default: return true;
  }
}

std::string to_repr(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return "Undefined";
    case Value::Kind::String: return py_string_repr(v.as_string());
    case Value::Kind::List: {
      const auto& l = v.as_list();
      if (l.one_shot())
        throw std::runtime_error("printing a " + l.iterator +
                                 " object (jinja2 prints its memory address) is not supported by this Jinja engine; "
                                 "convert it with | list");
      if (l.view()) return l.iterator + "(" + to_repr(Value::list(l.items)) + ")";
      std::string out = l.is_tuple ? "(" : "[";
      for (size_t i = 0; i < l.items.size(); ++i) out += (i ? ", " : "") + to_repr(l.items[i]);
      if (l.is_tuple && l.items.size() == 1) out += ",";
      return out + (l.is_tuple ? ")" : "]");
    }
    case Value::Kind::Dict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, x] : v.as_dict().items) {
        out += (first ? "" : ", ") + py_string_repr(k) + ": " + to_repr(x);
        first = false;
      }
      return out + "}";
    }
    case Value::Kind::Namespace: return "<Namespace " + to_repr(Value::dict(v.as_namespace().attrs)) + ">";
    case Value::Kind::Callable: return "<function " + v.as_callable().name + ">";
    default: return to_str(v);
  }
}

std::string to_str(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return "";
    case Value::Kind::None: return "None";
    case Value::Kind::Bool: return v.as_bool() ? "True" : "False";
    case Value::Kind::Int: return std::to_string(v.as_int());
    case Value::Kind::Float: return py_float_repr(v.as_double());
    case Value::Kind::String: return v.as_string();
    default: return to_repr(v);
  }
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return true;
    case Value::Kind::String: return a.as_string() == b.as_string();
    case Value::Kind::List: {
      const auto& x = a.as_list();
      const auto& y = b.as_list();
      if (x.one_shot() || y.one_shot()) return &x == &y;  // iterators compare by identity
      if (x.is_tuple != y.is_tuple || x.iterator != y.iterator || x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i)
        if (!equals(x.items[i], y.items[i])) return false;
      return true;
    }
    case Value::Kind::Dict: {
      const auto& x = a.as_dict();
      const auto& y = b.as_dict();
      if (x.items.size() != y.items.size()) return false;
      for (const auto& [k, v] : x.items) {
        const Value* w = y.find(k);
        if (!w || !equals(v, *w)) return false;
      }
      return true;
    }
    case Value::Kind::Namespace: return &a.as_namespace() == &b.as_namespace();
    case Value::Kind::Callable: return &a.as_callable() == &b.as_callable();
    default: return false;
  }
}

bool less_than(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();  // UTF-8 byte order = code point order
  if (a.is_list() && b.is_list() && a.as_list().plain() && b.as_list().plain() &&
      a.as_list().is_tuple == b.as_list().is_tuple) {
    const auto& x = a.as_list().items;
    const auto& y = b.as_list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i)
      if (!equals(x[i], y[i])) return less_than(x[i], y[i]);
    return x.size() < y.size();
  }
  throw std::runtime_error("'<' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() +
                           "'");
}

int64_t length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return 0;
    case Value::Kind::String: return py_len(v.as_string());
    case Value::Kind::List:
      if (v.as_list().one_shot()) throw std::runtime_error("object of type '" + v.type_name() + "' has no len()");
      return int64_t(v.as_list().items.size());
    case Value::Kind::Dict: return int64_t(v.as_dict().items.size());
    default: throw std::runtime_error("object of type '" + v.type_name() + "' has no len()");
  }
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return {};
    case Value::Kind::List: {
      const ListObject& l = v.as_list();
      if (!l.one_shot()) return l.items;
      if (l.consumed) return {};  // a Python iterator yields its items once
      l.consumed = true;
      return l.items;
    }
    case Value::Kind::Dict: {
      std::vector<Value> keys;
      for (const auto& [k, x] : v.as_dict().items) keys.emplace_back(k);
      return keys;
    }
    case Value::Kind::String: {
      std::vector<Value> chars;
      for (const char32_t c : decode_utf8(v.as_string())) chars.emplace_back(encode_utf8(c));
      return chars;
    }
    default: throw std::runtime_error("'" + v.type_name() + "' object is not iterable");
  }
}

}  // namespace astrai::jinja
