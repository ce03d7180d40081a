// JSON in, Python's json.dumps out (see json_value.h).
#include "engine/jinja/json_value.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "engine/jinja/python_text.h"

namespace astrai::jinja {

Value from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const auto u = j.get<uint64_t>();
      if (u > uint64_t(INT64_MAX)) throw std::runtime_error("integer " + std::to_string(u) + " is too large");
      return Value(int64_t(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      for (const auto& x : j) items.push_back(from_json(x));
      return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      DictObject d;
      for (const auto& [k, x] : j.items()) d.items.emplace_back(k, from_json(x));
      return Value::dict(std::move(d));
    }
    default: throw std::runtime_error("unsupported JSON value (binary)");
  }
}

namespace {

// json's py_encode_basestring(_ascii): ", \ and control characters are
// escaped; with ensure_ascii, every non-ASCII code point too (\uXXXX, surrogate
// pairs above U+FFFF).
void dump_string(const std::string& s, bool ensure_ascii, std::string& out) {
  static const char* hex = "0123456789abcdef";
  auto u4 = [&](unsigned v) {
    out += std::string("\\u") + hex[v >> 12] + hex[(v >> 8) & 15] + hex[(v >> 4) & 15] + hex[v & 15];
  };
  auto ascii = [&](char c) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (uint8_t(c) < 0x20) u4(uint8_t(c));
        else out += c;
    }
  };
  out += '"';
  if (ensure_ascii) {
    for (const char32_t c : decode_utf8(s)) {
      if (c < 0x80) {
        ascii(char(c));
      } else if (c < 0x10000) {
        u4(unsigned(c));
      } else {
        const unsigned v = unsigned(c) - 0x10000;
        u4(0xD800 + (v >> 10));
        u4(0xDC00 + (v & 0x3FF));
      }
    }
  } else {
    for (const char c : s) ascii(c);  // bytes >= 0x80 pass through: UTF-8 text stays raw
  }
  out += '"';
}

void dump(const Value& v, const JsonDumpOptions& o, int depth, std::string& out) {
  const std::string item_sep = o.item_separator.value_or(o.indent ? "," : ", ");
  const std::string key_sep = o.key_separator.value_or(": ");
  auto newline = [&](int level) {
    if (!o.indent) return;
    out += '\n';
    for (int i = 0; i < level; ++i) out += *o.indent;
  };
  switch (v.kind()) {
    case Value::Kind::None: out += "null"; return;
    case Value::Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
    case Value::Kind::Int: out += std::to_string(v.as_int()); return;
    case Value::Kind::Float: {
      const double d = v.as_double();
      out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity") : py_float_repr(d);
      return;
    }
    case Value::Kind::String: dump_string(v.as_string(), o.ensure_ascii, out); return;
    case Value::Kind::List: {
      if (!v.as_list().plain()) throw std::runtime_error("Object of type " + v.type_name() + " is not JSON serializable");
      const auto& items = v.as_list().items;
      if (items.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += item_sep;
        newline(depth + 1);
        dump(items[i], o, depth + 1, out);
      }
      newline(depth);
      out += ']';
      return;
    }
    case Value::Kind::Dict: {
      auto items = v.as_dict().items;
      if (items.empty()) {
        out += "{}";
        return;
      }
      if (o.sort_keys)
        std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      out += '{';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += item_sep;
        newline(depth + 1);
        dump_string(items[i].first, o.ensure_ascii, out);
        out += key_sep;
        dump(items[i].second, o, depth + 1, out);
      }
      newline(depth);
      out += '}';
      return;
    }
    default: throw std::runtime_error("Object of type " + v.type_name() + " is not JSON serializable");
  }
}

}  // namespace

std::string python_json_dumps(const Value& v, const JsonDumpOptions& options) {
  std::string out;
  dump(v, options, 0, out);
  return out;
}

}  // namespace astrai::jinja
