// The tree-walking renderer (see renderer.h).
#include "engine/jinja/renderer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <unordered_map>

#include "engine/jinja/builtins.h"
#include "engine/jinja/error.h"
#include "engine/jinja/python_text.h"
#include "engine/jinja/render_limits.h"

namespace astrai::jinja {

namespace {

// Variables set in one scope. jinja2 gives each for-loop iteration and each
// macro call a scope of its own (so `set` inside a loop does not outlive the
// iteration: that is what namespace() is for); if/elif/else do not.
struct Scope {
  Scope* parent = nullptr;
  std::unordered_map<std::string, Value> vars;
};

enum class Flow { Normal, Break, Continue };

[[noreturn]] void fail_undefined(const Value& v) { throw std::runtime_error(v.undefined_description()); }

void check_overflow(bool overflow) {
  if (overflow) throw std::runtime_error("integer result outside the 64-bit range this Jinja engine supports");
}

bool is_intlike(const Value& v) { return v.is_int() || v.is_bool(); }

std::string operand_error(const std::string& op, const Value& a, const Value& b) {
  return "unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" + b.type_name() + "'";
}

Value repeat(const Value& seq, int64_t n) {
  check_repeated_size(seq.is_string() ? seq.as_string().size() : seq.as_list().items.size(), n, !seq.is_string());
  if (seq.is_string()) {
    std::string out;
    for (int64_t i = 0; i < n; ++i) out += seq.as_string();
    return Value(out);
  }
  std::vector<Value> out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.as_list().items.begin(), seq.as_list().items.end());
  return Value::list(std::move(out), seq.as_list().is_tuple);
}

// Python's binary arithmetic operators on template values.
Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  if (op == "%" && a.is_string()) throw std::runtime_error("printf-style string formatting ('%') is not supported by this Jinja engine");
  for (const Value* v : {&a, &b})
    if (v->is_list() && v->as_list().view() && op != "*" && op != "/" && op != "//" && op != "**")
      throw std::runtime_error("set operations on dict views (" + op + ") are not supported by this Jinja engine");
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  const bool nums = a.is_number() && b.is_number();
  const bool ints = is_intlike(a) && is_intlike(b);
  int64_t r = 0;
  if (op == "+") {
    if (ints) {
      check_overflow(__builtin_add_overflow(a.as_int(), b.as_int(), &r));
      return Value(r);
    }
    if (nums) return Value(a.as_double() + b.as_double());
    if (a.is_string() && b.is_string()) {
      check_string_size(a.as_string().size() + b.as_string().size());
      return Value(a.as_string() + b.as_string());
    }
    if (a.is_list() && b.is_list() && a.as_list().plain() && b.as_list().plain() &&
        a.as_list().is_tuple == b.as_list().is_tuple) {
      check_list_size(a.as_list().items.size() + b.as_list().items.size());
      std::vector<Value> items = a.as_list().items;
      items.insert(items.end(), b.as_list().items.begin(), b.as_list().items.end());
      return Value::list(std::move(items), a.as_list().is_tuple);
    }
    if (a.is_string()) throw std::runtime_error("can only concatenate str (not \"" + b.type_name() + "\") to str");
    throw std::runtime_error(operand_error("+", a, b));
  }
  if (op == "-") {
    if (ints) {
      check_overflow(__builtin_sub_overflow(a.as_int(), b.as_int(), &r));
      return Value(r);
    }
    if (nums) return Value(a.as_double() - b.as_double());
    throw std::runtime_error(operand_error("-", a, b));
  }
  if (op == "*") {
    if (ints) {
      check_overflow(__builtin_mul_overflow(a.as_int(), b.as_int(), &r));
      return Value(r);
    }
    if (nums) return Value(a.as_double() * b.as_double());
    auto sequence = [](const Value& v) { return v.is_string() || (v.is_list() && v.as_list().plain()); };
    if (sequence(a) && is_intlike(b)) return repeat(a, b.as_int());
    if (sequence(b) && is_intlike(a)) return repeat(b, a.as_int());
    throw std::runtime_error(operand_error("*", a, b));
  }
  if (!nums) throw std::runtime_error(operand_error(op, a, b));
  if (op == "/") {
    if (b.as_double() == 0) throw std::runtime_error("division by zero");
    return Value(a.as_double() / b.as_double());
  }
  if (op == "//" || op == "%") {
    if (ints) {
      const int64_t x = a.as_int(), y = b.as_int();
      if (y == 0) throw std::runtime_error("integer division or modulo by zero");
      check_overflow(x == INT64_MIN && y == -1);
      int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {  // Python floors; C++ truncates
        --q;
        m += y;
      }
      return Value(op == "//" ? q : m);
    }
    // CPython's float divmod.
    const double x = a.as_double(), y = b.as_double();
    if (y == 0) throw std::runtime_error("float division by zero");
    double mod = std::fmod(x, y);
    double div = (x - mod) / y;
    if (mod != 0) {
      if ((y < 0) != (mod < 0)) {
        mod += y;
        div -= 1.0;
      }
    } else {
      mod = std::copysign(0.0, y);
    }
    if (op == "%") return Value(mod);
    double floordiv = std::copysign(0.0, x / y);
    if (div != 0) {
      floordiv = std::floor(div);
      if (div - floordiv > 0.5) floordiv += 1.0;
    }
    return Value(floordiv);
  }
  if (op == "**") {
    if (ints && b.as_int() >= 0) {
      int64_t result = 1, base = a.as_int();
      for (int64_t e = b.as_int(); e > 0; e >>= 1) {  // square and multiply
        if (e & 1) check_overflow(__builtin_mul_overflow(result, base, &result));
        if (e > 1) check_overflow(__builtin_mul_overflow(base, base, &base));
      }
      return Value(result);
    }
    return Value(std::pow(a.as_double(), b.as_double()));
  }
  throw std::runtime_error("unknown operator " + op);
}

bool compare(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return equals(a, b);
  if (op == "!=") return !equals(a, b);
  if (op == "in" || op == "not in") {
    CallArgs args;
    args.positional.push_back(b);
    return apply_test("in", a, args) == (op == "in");
  }
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (op == "<") return less_than(a, b);
  if (op == ">") return less_than(b, a);
  if (op == "<=") return less_than(a, b) || equals(a, b);
  if (op == ">=") return less_than(b, a) || equals(a, b);
  throw std::runtime_error("unknown comparison " + op);
}

class Renderer {
 public:
  Renderer(const DictObject& context, const RenderLimits& limits) : context_(context), limits_(limits) {}

  std::string run(const Body& body) {
    const ScopedRenderLimits scoped(limits_);
    Scope root;
    root_ = &root;
    std::string out;
    try {
      if (exec(body, root, out) != Flow::Normal) throw std::runtime_error("'break' or 'continue' outside a loop");
    } catch (const TemplateError&) {
      throw;
    } catch (const RaiseRequest& r) {
      throw RaisedException(r.message, line_);
    } catch (const std::exception& e) {
      throw TemplateError(e.what(), line_);
    }
    return out;
  }

 private:
  Flow exec(const Body& body, Scope& scope, std::string& out) {
    for (const auto& node : body) {
      const Flow f = exec(*node, scope, out);
      if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
  }

  // One statement or expression more; throws past the render's budget.
  void step() {
    if (++steps_ > limits_.max_steps)
      throw std::runtime_error("the template ran more than " + std::to_string(limits_.max_steps) +
                               " steps, this engine's limit (a loop without end?)");
    if (steps_ % 4096 == 0 && clock_limited_ && std::chrono::steady_clock::now() > deadline_)
      throw std::runtime_error("the template took longer than " + py_float_repr(limits_.max_seconds) +
                               " s to render, this engine's limit");
  }

  void append(std::string& out, std::string_view text) {
    check_string_size(out.size() + text.size());
    out += text;
  }

  Flow exec(const Node& n, Scope& scope, std::string& out) {
    line_ = n.line;
    step();
    switch (n.kind) {
      case Node::Kind::Text: append(out, n.text); return Flow::Normal;
      case Node::Kind::Output: append(out, to_str(eval(*n.expr, scope))); return Flow::Normal;
      case Node::Kind::If:
        for (const auto& [cond, body] : n.branches)
          if (truthy(eval(*cond, scope))) return exec(body, scope, out);
        return exec(n.else_body, scope, out);
      case Node::Kind::For: return exec_for(n, scope, out);
      case Node::Kind::Set: assign(n.target, eval(*n.expr, scope), scope); return Flow::Normal;
      case Node::Kind::SetBlock: {
        std::string captured;
        Scope inner{&scope, {}};  // jinja2 renders a block set's body in a frame of its own
        if (exec(n.body, inner, captured) != Flow::Normal) throw std::runtime_error("'break' or 'continue' inside a set block");
        assign(n.target, Value(captured), scope);
        return Flow::Normal;
      }
      case Node::Kind::Macro: {
        const Node* macro = &n;
        scope.vars[n.text] = Value::callable(n.text, [this, macro](const CallArgs& a) { return call_macro(*macro, a); });
        return Flow::Normal;
      }
      case Node::Kind::Break: return Flow::Break;
      case Node::Kind::Continue: return Flow::Continue;
      case Node::Kind::Scope: return exec(n.body, scope, out);
    }
    return Flow::Normal;
  }

  Flow exec_for(const Node& n, Scope& scope, std::string& out) {
    std::vector<Value> items = iterate(eval(*n.expr, scope));
    if (n.filter) {  // {% for x in xs if cond %}: loop.* count the kept items only
      std::vector<Value> kept;
      for (const Value& item : items) {
        Scope s{&scope, {}};
        bind(n.target, item, s);
        if (truthy(eval(*n.filter, s))) kept.push_back(item);
      }
      items = std::move(kept);
    }
    // jinja2 marks the loop as iterated at the end of the body, so an
    // iteration cut short by break or continue does not count: the else block
    // runs unless some iteration ran to the end of the body.
    bool completed = false;
    const int64_t len = int64_t(items.size());
    for (int64_t i = 0; i < len; ++i) {
      step();  // an iteration is a step even when its body is empty
      Scope s{&scope, {}};
      bind(n.target, items[size_t(i)], s);
      s.vars["loop"] = loop_object(items, i);
      const Flow f = exec(n.body, s, out);
      if (f == Flow::Break) break;
      if (f == Flow::Normal) completed = true;
    }
    if (!completed && !n.else_body.empty()) {
      Scope s{&scope, {}};
      return exec(n.else_body, s, out);
    }
    return Flow::Normal;
  }

  static Value loop_object(const std::vector<Value>& items, int64_t i) {
    const int64_t len = int64_t(items.size());
    DictObject loop;
    loop.set("index", Value(i + 1));
    loop.set("index0", Value(i));
    loop.set("revindex", Value(len - i));
    loop.set("revindex0", Value(len - i - 1));
    loop.set("first", Value(i == 0));
    loop.set("last", Value(i == len - 1));
    loop.set("length", Value(len));
    loop.set("depth", Value(int64_t(1)));
    loop.set("depth0", Value(int64_t(0)));
    if (i > 0) loop.set("previtem", items[size_t(i - 1)]);
    if (i + 1 < len) loop.set("nextitem", items[size_t(i + 1)]);
    loop.set("cycle", Value::callable("loop.cycle", [i](const CallArgs& a) {
      if (a.positional.empty()) throw std::runtime_error("no items for cycling given");
      return a.positional[size_t(i) % a.positional.size()];
    }));
    return Value::dict(std::move(loop));
  }

  // Binds loop variables or `set` targets: a name, or tuple unpacking.
  static void bind(const Target& t, const Value& v, Scope& s) {
    if (!t.tuple) {
      s.vars[t.names[0]] = v;
      return;
    }
    const std::vector<Value> parts = iterate(v);
    if (parts.size() != t.names.size())
      throw std::runtime_error(std::string(parts.size() > t.names.size() ? "too many" : "not enough") +
                               " values to unpack (expected " + std::to_string(t.names.size()) + ", got " +
                               std::to_string(parts.size()) + ")");
    for (size_t i = 0; i < parts.size(); ++i) s.vars[t.names[i]] = parts[i];
  }

  void assign(const Target& t, const Value& v, Scope& s) {
    if (t.attribute.empty()) {
      bind(t, v, s);
      return;
    }
    const Value ns = lookup(t.names[0], s);
    if (!ns.is_namespace()) throw std::runtime_error("cannot assign attribute on non-namespace object");
    set_namespace_attribute(ns.as_namespace(), t.attribute, v);
  }

  Value call_macro(const Node& m, const CallArgs& a) {
    // A macro calling itself without end is an error (jinja2: RecursionError), not a stack overflow.
    if (macro_depth_ >= 100) throw std::runtime_error("macro calls nest deeper than 100 (recursion without end?)");
    ++macro_depth_;
    struct Leave {
      int& depth;
      ~Leave() { --depth; }
    } leave{macro_depth_};
    if (a.positional.size() > m.params.size())
      throw std::runtime_error("macro '" + m.text + "' takes not more than " + std::to_string(m.params.size()) +
                               " argument(s)");
    for (const auto& [k, v] : a.keyword) {
      bool known = false;
      for (const auto& p : m.params) known = known || p.name == k;
      if (!known) throw std::runtime_error("macro '" + m.text + "' takes no keyword argument '" + k + "'");
    }
    Scope s{root_, {}};
    for (size_t i = 0; i < m.params.size(); ++i) {
      const MacroParam& p = m.params[i];
      if (const Value* v = a.get(i, p.name)) s.vars[p.name] = *v;
      else if (p.default_value) s.vars[p.name] = eval(*p.default_value, s);
      else s.vars[p.name] = Value::undefined("parameter '" + p.name + "' was not provided");
    }
    std::string out;
    if (exec(m.body, s, out) != Flow::Normal) throw std::runtime_error("'break' or 'continue' outside a loop");
    return Value(out);
  }

  Value lookup(const std::string& name, const Scope& scope) const {
    for (const Scope* s = &scope; s; s = s->parent) {
      const auto it = s->vars.find(name);
      if (it != s->vars.end()) return it->second;
    }
    if (const Value* v = context_.find(name)) return *v;
    if (const Value* v = template_globals().find(name)) return *v;
    return Value::undefined("'" + name + "' is undefined");
  }

  CallArgs eval_args(const Expr& e, Scope& s, size_t first) {
    CallArgs a;
    for (size_t i = first; i < e.children.size(); ++i) a.positional.push_back(eval(*e.children[i], s));
    for (const auto& [k, v] : e.kwargs) a.keyword.emplace_back(k, eval(*v, s));
    return a;
  }

  Value eval(const Expr& e, Scope& s) {
    line_ = e.line;
    step();
    switch (e.kind) {
      case Expr::Kind::Literal: return e.literal;
      case Expr::Kind::Name: return lookup(e.name, s);
      case Expr::Kind::List:
      case Expr::Kind::Tuple: {
        std::vector<Value> items;
        for (const auto& c : e.children) items.push_back(eval(*c, s));
        return Value::list(std::move(items), e.kind == Expr::Kind::Tuple);
      }
      case Expr::Kind::Dict: {
        DictObject d;
        for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
          const Value k = eval(*e.children[i], s);
          if (!k.is_string()) throw std::runtime_error("dict literal keys other than strings are not supported by this Jinja engine");
          d.set(k.as_string(), eval(*e.children[i + 1], s));
        }
        return Value::dict(std::move(d));
      }
      case Expr::Kind::Attribute: return get_attribute(eval(*e.children[0], s), e.name);
      case Expr::Kind::Item: {
        const Value obj = eval(*e.children[0], s);
        return get_item(obj, eval(*e.children[1], s));
      }
      case Expr::Kind::Slice: return slice(e, s);
      case Expr::Kind::Call: {
        const Value callee = eval(*e.children[0], s);
        const CallArgs a = eval_args(e, s, 1);
        line_ = e.line;
        if (callee.is_undefined()) fail_undefined(callee);
        if (!callee.is_callable()) throw std::runtime_error("'" + callee.type_name() + "' object is not callable");
        return callee.as_callable().call(a);
      }
      case Expr::Kind::Filter: {
        const Value input = eval(*e.children[0], s);
        const CallArgs a = eval_args(e, s, 1);
        line_ = e.line;
        return apply_filter(e.name, input, a);
      }
      case Expr::Kind::Test: {
        const Value input = eval(*e.children[0], s);
        const CallArgs a = eval_args(e, s, 1);
        line_ = e.line;
        return Value(apply_test(e.name, input, a) != e.negated);
      }
      case Expr::Kind::Unary: {
        const Value v = eval(*e.children[0], s);
        if (e.name == "not") return Value(!truthy(v));
        if (v.is_undefined()) fail_undefined(v);
        if (!v.is_number()) throw std::runtime_error("bad operand type for unary " + e.name + ": '" + v.type_name() + "'");
        if (e.name == "+") return v.is_float() ? v : Value(v.as_int());
        if (v.is_float()) return Value(-v.as_double());
        check_overflow(v.as_int() == INT64_MIN);
        return Value(-v.as_int());
      }
      case Expr::Kind::Binary: {
        const Value a = eval(*e.children[0], s);
        if (e.name == "and") return truthy(a) ? eval(*e.children[1], s) : a;
        if (e.name == "or") return truthy(a) ? a : eval(*e.children[1], s);
        const Value b = eval(*e.children[1], s);
        line_ = e.line;
        if (e.name == "~") {
          std::string joined = to_str(a);
          append(joined, to_str(b));
          return Value(std::move(joined));
        }
        return arithmetic(e.name, a, b);
      }
      case Expr::Kind::Compare: {
        Value left = eval(*e.children[0], s);
        for (size_t i = 0; i < e.ops.size(); ++i) {
          Value right = eval(*e.children[i + 1], s);
          line_ = e.line;
          if (!compare(e.ops[i], left, right)) return Value(false);
          left = std::move(right);
        }
        return Value(true);
      }
      case Expr::Kind::Conditional:
        if (truthy(eval(*e.children[0], s))) return eval(*e.children[1], s);
        if (e.children[2]) return eval(*e.children[2], s);
        return Value::undefined("the inline if expression evaluated to false and no else section was defined");
    }
    return Value();
  }

  Value slice(const Expr& e, Scope& s) {
    const Value obj = eval(*e.children[0], s);
    // jinja2 compiles slices to plain Python subscripts (not environment.getitem),
    // so every failure raises: a bound that is no int, an object without slicing.
    std::optional<int64_t> bounds[3];
    for (int i = 0; i < 3; ++i) {
      if (!e.children[size_t(i) + 1]) continue;
      const Value b = eval(*e.children[size_t(i) + 1], s);
      if (b.is_undefined()) fail_undefined(b);
      if (is_intlike(b)) bounds[i] = b.as_int();
      else if (!b.is_none()) throw std::runtime_error("slice indices must be integers or None or have an __index__ method");
    }
    line_ = e.line;
    if (obj.is_undefined()) fail_undefined(obj);
    if (obj.is_string()) return Value(py_slice(obj.as_string(), bounds[0], bounds[1], bounds[2]));
    if (obj.is_list() && obj.as_list().plain()) {
      std::vector<Value> out;
      const auto& items = obj.as_list().items;
      for (const int64_t i : slice_indices(int64_t(items.size()), bounds[0], bounds[1], bounds[2])) out.push_back(items[size_t(i)]);
      return Value::list(std::move(out), obj.as_list().is_tuple);
    }
    if (obj.is_dict()) throw std::runtime_error("unhashable type: 'slice'");
    std::string message = "'";
    message += obj.type_name();
    throw std::runtime_error(message + "' object is not subscriptable");
  }

  const DictObject& context_;
  const RenderLimits& limits_;
  int64_t steps_ = 0;
  const bool clock_limited_ = limits_.max_seconds != RenderLimits::kNoClockLimit;
  const std::chrono::steady_clock::time_point deadline_ =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(std::min(limits_.max_seconds, 1e6)));
  Scope* root_ = nullptr;
  int line_ = 1;
  int macro_depth_ = 0;
};

}  // namespace

std::string render(const Body& body, const DictObject& context, const RenderLimits& limits) {
  return Renderer(context, limits).run(body);
}

}  // namespace astrai::jinja
