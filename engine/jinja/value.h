// The values a Jinja template computes with, modelled on the Python objects
// jinja2 works with (it is what Hugging Face's apply_chat_template renders
// with): Undefined, None, bool, int, float, str, list/tuple, dict (insertion
// ordered, string keys), jinja2's Namespace, and callables (macros, builtins,
// bound methods). Lists and dicts are shared like Python references; the
// sandbox transformers uses (ImmutableSandboxedEnvironment) forbids mutating
// them, so only a Namespace is ever written after creation.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace astrai::jinja {

class Value;

// How deep lists and dicts may nest. Every walk over a value (printing,
// comparing, tojson, and freeing it) recurses once per level, so a list
// wrapped around itself in a loop must stop here rather than overflow the
// stack; Python stops near 1000 levels (RecursionError).
inline constexpr int kMaxValueDepth = 512;

struct ListObject {
  std::vector<Value> items;
  // Levels of nesting, this one included, and whether a namespace lies
  // within: fixed at creation (Value::list, Value::iterator), since lists
  // never change afterwards in the sandbox.
  int depth = 1;
  bool holds_namespace = false;
  bool is_tuple = false;  // only changes how it prints: (1, 2) instead of [1, 2]
  // Non-empty for what Python gives as an iterator or a view rather than a
  // list: "generator" (jinja2's select, map, selectattr... and the items
  // filter), "list_reverseiterator" / "reversed" / "dict_reversekeyiterator"
  // (the reverse filter): iterable once, always true, no len(), no indexing,
  // and refused when printed (jinja2 would print a memory address);
  // "dict_items" / "dict_keys" / "dict_values" (dict methods): a len(),
  // iterable again, no indexing, printed as dict_items([...]).
  std::string iterator;
  mutable bool consumed = false;  // a one-shot iterator that has been walked
  bool plain() const { return iterator.empty(); }
  bool one_shot() const { return !iterator.empty() && !view(); }
  bool view() const { return iterator == "dict_items" || iterator == "dict_keys" || iterator == "dict_values"; }
};

// A Python dict with string keys, in insertion order (as json.loads builds
// them and as `for k, v in d.items()` walks them).
struct DictObject {
  std::vector<std::pair<std::string, Value>> items;
  int depth = 1;                 // as ListObject's, fixed by Value::dict
  bool holds_namespace = false;
  const Value* find(const std::string& key) const;
  void set(const std::string& key, Value value);  // replaces in place or appends
};

// jinja2's namespace(): the one object a template may assign attributes to.
struct NamespaceObject {
  DictObject attrs;
};
// `{% set ns.name = value %}`. Throws std::runtime_error when the value is or
// holds a namespace (which could be ns itself: a cycle).
void set_namespace_attribute(NamespaceObject& ns, const std::string& name, Value value);

// Arguments of a call, evaluated: f(a, b, key=c).
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  // The argument at `index`, or named `name`, or nullptr when absent.
  const Value* get(size_t index, const std::string& name) const;
};

struct CallableObject {
  std::string name;  // for error messages and printing
  std::function<Value(const CallArgs&)> call;
};

// jinja2's Undefined: what a missing variable, key, attribute or index gives.
// It prints as "", is false, iterates as empty, has length 0, and raises an
// error on anything else (attribute access, arithmetic, ordering).
struct Undefined {
  std::string description;  // e.g. "'foo' is undefined", for errors
};
struct None {};

class Value {
 public:
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Callable };

  Value() : v_(Undefined{}) {}
  static Value undefined(std::string description) { return Value(Undefined{std::move(description)}); }
  static Value none() { return Value(None{}); }
  Value(bool b) : v_(b) {}
  Value(int64_t i) : v_(i) {}
  Value(int i) : v_(int64_t(i)) {}
  Value(double d) : v_(d) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(const char* s) : v_(std::string(s)) {}
  static Value list(std::vector<Value> items, bool tuple = false);
  // An iterator or view over `items` (see ListObject::iterator).
  static Value iterator(std::vector<Value> items, std::string type);
  static Value dict(DictObject d);
  static Value namespace_object(DictObject attrs);
  static Value callable(std::string name, std::function<Value(const CallArgs&)> fn);

  Kind kind() const { return Kind(v_.index()); }
  bool is_undefined() const { return kind() == Kind::Undefined; }
  bool is_none() const { return kind() == Kind::None; }
  bool is_bool() const { return kind() == Kind::Bool; }
  bool is_int() const { return kind() == Kind::Int; }
  bool is_float() const { return kind() == Kind::Float; }
  bool is_number() const { return is_bool() || is_int() || is_float(); }  // Python: bool is an int
  bool is_string() const { return kind() == Kind::String; }
  bool is_list() const { return kind() == Kind::List; }
  bool is_dict() const { return kind() == Kind::Dict; }
  bool is_namespace() const { return kind() == Kind::Namespace; }
  bool is_callable() const { return kind() == Kind::Callable; }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return is_bool() ? int64_t(as_bool()) : std::get<int64_t>(v_); }
  double as_double() const { return is_float() ? std::get<double>(v_) : double(as_int()); }
  const std::string& as_string() const { return std::get<std::string>(v_); }
  const ListObject& as_list() const { return *std::get<std::shared_ptr<ListObject>>(v_); }
  const DictObject& as_dict() const { return *std::get<std::shared_ptr<DictObject>>(v_); }
  NamespaceObject& as_namespace() const { return *std::get<std::shared_ptr<NamespaceObject>>(v_); }
  const CallableObject& as_callable() const { return *std::get<std::shared_ptr<CallableObject>>(v_); }
  const std::string& undefined_description() const { return std::get<Undefined>(v_).description; }

  // Python's type name, for error messages: "str", "int", "dict", ...
  std::string type_name() const;

 private:
  explicit Value(Undefined u) : v_(std::move(u)) {}
  explicit Value(None n) : v_(n) {}
  std::variant<Undefined, None, bool, int64_t, double, std::string, std::shared_ptr<ListObject>,
               std::shared_ptr<DictObject>, std::shared_ptr<NamespaceObject>, std::shared_ptr<CallableObject>>
      v_;
};

// Python's bool(x).
bool truthy(const Value& v);
// Python's str(x) as jinja2 prints it: "" for Undefined, "None", "True",
// repr() of floats, ['a', 1] for lists.
std::string to_str(const Value& v);
// Python's repr(x).
std::string to_repr(const Value& v);
// Python's ==: 1 == 1.0 == True, lists and dicts by content, Undefined equals
// only Undefined.
bool equals(const Value& a, const Value& b);
// Python's <, for numbers, strings (code point order, which UTF-8 byte order
// preserves) and lists; anything else throws std::runtime_error.
bool less_than(const Value& a, const Value& b);
// Python's len(); throws for types without one.
int64_t length(const Value& v);
// What `for x in v` walks: list items, dict keys, string characters (code
// points); Undefined is empty; anything else throws.
std::vector<Value> iterate(const Value& v);

}  // namespace astrai::jinja
