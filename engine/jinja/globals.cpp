// The functions a chat template can call by name: transformers adds
// raise_exception(message) and strftime_now(format) to jinja2's defaults
// (namespace, range, dict; lipsum, cycler and joiner are refused by name).
#include <chrono>
#include <ctime>
#include <stdexcept>

#include "engine/jinja/builtins.h"
#include "engine/jinja/error.h"

namespace astrai::jinja {

namespace {

Value raise_exception(const CallArgs& a) {
  const Value* m = a.get(0, "message");
  throw RaiseRequest{m ? to_str(*m) : ""};
}

// datetime.now().strftime(format): local time; %f (microseconds) is
// datetime's own, every other directive is the C library's, as in CPython.
Value strftime_now(const CallArgs& a) {
  const Value* f = a.get(0, "format");
  if (!f || !f->is_string()) throw std::runtime_error("strftime_now() needs a format string");
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1000000;
  std::tm local{};
  localtime_r(&t, &local);
  std::string format;
  const std::string& in = f->as_string();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '%' && i + 1 < in.size() && in[i + 1] == 'f') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "%06lld", static_cast<long long>(micros));
      format += buf;
      ++i;
    } else if (in[i] == '%' && i + 1 < in.size()) {
      format += in.substr(i, 2);
      ++i;
    } else {
      format += in[i];
    }
  }
  if (format.empty()) return Value("");
  std::string out(format.size() * 4 + 64, '\0');
  // A leading marker character keeps an empty expansion distinguishable from a too-small buffer.
  const std::string marked = "x" + format;
  size_t n = 0;
  while ((n = std::strftime(out.data(), out.size(), marked.c_str(), &local)) == 0) out.resize(out.size() * 2);
  return Value(out.substr(1, n - 1));
}

Value namespace_fn(const CallArgs& a) {
  DictObject attrs;
  for (const Value& p : a.positional) {
    if (!p.is_dict()) throw std::runtime_error("namespace() positional arguments must be dicts");
    for (const auto& [k, v] : p.as_dict().items) attrs.set(k, v);
  }
  for (const auto& [k, v] : a.keyword) attrs.set(k, v);
  return Value::namespace_object(std::move(attrs));
}

Value range_fn(const CallArgs& a) {
  if (!a.keyword.empty() || a.positional.empty() || a.positional.size() > 3)
    throw std::runtime_error("range expected 1 to 3 integer arguments");
  for (const Value& v : a.positional)
    if (!v.is_int() && !v.is_bool()) throw std::runtime_error("'" + v.type_name() + "' object cannot be interpreted as an integer");
  const int64_t start = a.positional.size() == 1 ? 0 : a.positional[0].as_int();
  const int64_t stop = a.positional.size() == 1 ? a.positional[0].as_int() : a.positional[1].as_int();
  const int64_t step = a.positional.size() == 3 ? a.positional[2].as_int() : 1;
  if (step == 0) throw std::runtime_error("range() arg 3 must not be zero");
  std::vector<Value> out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    // jinja2's sandbox caps ranges at MAX_RANGE = 100000 items.
    if (out.size() >= 100000) throw std::runtime_error("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    out.emplace_back(i);
  }
  return Value::list(std::move(out));
}

Value dict_fn(const CallArgs& a) {
  if (!a.positional.empty()) throw std::runtime_error("dict() with positional arguments is not supported by this Jinja engine");
  DictObject d;
  for (const auto& [k, v] : a.keyword) d.set(k, v);
  return Value::dict(std::move(d));
}

Value refused(const std::string& name) {
  return Value::callable(name, [name](const CallArgs&) -> Value {
    throw std::runtime_error("the global '" + name + "' is not supported by this Jinja engine");
  });
}

}  // namespace

const DictObject& template_globals() {
  static const DictObject globals = [] {
    DictObject g;
    g.set("raise_exception", Value::callable("raise_exception", raise_exception));
    g.set("strftime_now", Value::callable("strftime_now", strftime_now));
    g.set("namespace", Value::callable("namespace", namespace_fn));
    g.set("range", Value::callable("range", range_fn));
    g.set("dict", Value::callable("dict", dict_fn));
    for (const char* name : {"lipsum", "cycler", "joiner"}) g.set(name, refused(name));
    return g;
  }();
  return globals;
}

}  // namespace astrai::jinja
