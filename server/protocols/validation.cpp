#include "server/protocols/validation.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace astrai {

using json = nlohmann::ordered_json;

ValidationError::ValidationError(std::vector<FieldError> errors)
    : std::runtime_error("request validation failed"), errors_(std::move(errors)) {}

json ValidationError::body() const {
  json detail = json::array();
  for (const auto& e : errors_) detail.push_back({{"loc", e.loc}, {"msg", e.msg}, {"type", e.type}});
  return {{"detail", detail}};
}

json loc_append(json loc, const json& step) {
  loc.push_back(step);
  return loc;
}

void FieldChecker::add(json loc, std::string msg, std::string type) {
  errors_.push_back({std::move(loc), std::move(msg), std::move(type)});
}

void FieldChecker::throw_if_any() const {
  if (!errors_.empty()) throw ValidationError(errors_);
}

const json* FieldChecker::field(const json& obj, const json& loc, const std::string& key, bool required) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    if (required) add(loc_append(loc, key), "Field required", "missing");
    return nullptr;
  }
  return &*it;
}

std::optional<std::string> FieldChecker::string_field(const json& obj, const json& loc, const std::string& key,
                                                      bool required) {
  const json* value = field(obj, loc, key, required);
  return value ? string(*value, loc_append(loc, key)) : std::nullopt;
}

std::optional<std::string> FieldChecker::string(const json& value, const json& loc) {
  if (value.is_string()) return value.get<std::string>();
  add(loc, "Input should be a valid string", "string_type");
  return std::nullopt;
}

std::optional<long long> FieldChecker::integer(const json& value, const json& loc) {
  if (value.is_number_integer()) return value.get<long long>();
  if (value.is_number_unsigned()) {
    // Beyond long long: still an integer, clamp so range checks can speak.
    return (std::numeric_limits<long long>::max)();
  }
  if (value.is_number_float()) {
    const double x = value.get<double>();
    if (std::isfinite(x) && x == std::floor(x)) {
      // nlohmann reads integers beyond 64 bits as doubles. Integral values
      // within [-2^63, 2^64) are integers of the range the unsigned branch
      // above accepts (clamped the same way); beyond it, out of range.
      constexpr double two_63 = 9223372036854775808.0, two_64 = 18446744073709551616.0;
      if (x >= -two_63 && x < two_63) return static_cast<long long>(x);
      if (x >= two_63 && x < two_64) return (std::numeric_limits<long long>::max)();
      add(loc, "Input should be an integer from -2^63 to 2^64 - 1: this one is out of range", "int_parsing_size");
      return std::nullopt;
    }
    add(loc, "Input should be a valid integer, got a number with a fractional part", "int_from_float");
    return std::nullopt;
  }
  add(loc, "Input should be a valid integer", "int_type");
  return std::nullopt;
}

std::optional<double> FieldChecker::number(const json& value, const json& loc) {
  if (value.is_number()) return value.get<double>();
  add(loc, "Input should be a valid number", "float_type");
  return std::nullopt;
}

std::optional<bool> FieldChecker::boolean(const json& value, const json& loc) {
  if (value.is_boolean()) return value.get<bool>();
  add(loc, "Input should be a valid boolean", "bool_type");
  return std::nullopt;
}

bool FieldChecker::is_array(const json& value, const json& loc) {
  if (value.is_array()) return true;
  add(loc, "Input should be a valid list", "list_type");
  return false;
}

bool FieldChecker::is_object(const json& value, const json& loc) {
  if (value.is_object()) return true;
  add(loc, "Input should be a valid dictionary", "dict_type");
  return false;
}

namespace {
std::string number_text(double x) {
  if (x == std::floor(x) && std::fabs(x) < 1e15) return std::to_string(static_cast<long long>(x));
  json j = x;
  return j.dump();
}

// A JSON number (a double) as the engine's float, on the same side of 0:
// beyond float's range it becomes the largest float (temperature 1e39 must
// not become inf), and a positive value too small for a float the smallest
// positive one (top_p 1e-50 must not become 0, outside (0, 1]). Either means
// what was asked: a near-uniform draw, or only the most likely token.
float to_float_keeping_sign(double x) {
  constexpr double kLargest = std::numeric_limits<float>::max();
  const float f = float(std::clamp(x, -kLargest, kLargest));
  if (x > 0 && f == 0) return std::numeric_limits<float>::denorm_min();
  return f;
}
}  // namespace

void FieldChecker::at_least(double value, double bound, const json& loc) {
  if (!(value >= bound))
    add(loc, "Input should be greater than or equal to " + number_text(bound), "greater_than_equal");
}

void FieldChecker::above(double value, double bound, const json& loc) {
  if (!(value > bound)) add(loc, "Input should be greater than " + number_text(bound), "greater_than");
}

void FieldChecker::at_most(double value, double bound, const json& loc) {
  if (!(value <= bound)) add(loc, "Input should be less than or equal to " + number_text(bound), "less_than_equal");
}

CommonParameters read_common_parameters(FieldChecker& check, const json& body) {
  const json loc = json::array({"body"});
  CommonParameters p;
  auto loc_of = [&](const char* key) { return loc_append(loc, key); };
  if (const json* v = check.field(body, loc, "max_tokens"))
    if (auto n = check.integer(*v, loc_of("max_tokens"))) {
      check.at_least(double(*n), 1, loc_of("max_tokens"));
      p.max_tokens = int(std::min<long long>(*n, std::numeric_limits<int>::max()));
    }
  if (const json* v = check.field(body, loc, "temperature"))
    if (auto x = check.number(*v, loc_of("temperature"))) {
      check.at_least(*x, 0, loc_of("temperature"));
      p.temperature = to_float_keeping_sign(*x);
    }
  if (const json* v = check.field(body, loc, "top_p"))
    if (auto x = check.number(*v, loc_of("top_p"))) {
      check.above(*x, 0, loc_of("top_p"));
      check.at_most(*x, 1, loc_of("top_p"));
      p.top_p = to_float_keeping_sign(*x);
    }
  if (const json* v = check.field(body, loc, "top_k"))
    if (auto n = check.integer(*v, loc_of("top_k"))) {
      check.at_least(double(*n), 0, loc_of("top_k"));
      p.top_k = int(std::min<long long>(*n, std::numeric_limits<int>::max()));
    }
  if (const json* v = check.field(body, loc, "seed"))
    if (auto n = check.integer(*v, loc_of("seed"))) p.seed = static_cast<uint64_t>(*n);
  if (const json* v = check.field(body, loc, "stream"))
    if (auto b = check.boolean(*v, loc_of("stream"))) p.stream = *b;
  if (const json* v = check.field(body, loc, "ignore_eos"))
    if (auto b = check.boolean(*v, loc_of("ignore_eos"))) p.ignore_eos = *b;
  if (const json* v = check.field(body, loc, "speculative.n_max"))
    if (auto n = check.integer(*v, loc_of("speculative.n_max"))) {
      check.at_least(double(*n), 0, loc_of("speculative.n_max"));
      p.max_proposed = int(std::clamp<long long>(*n, 0, 1 << 20));
    }
  return p;
}

void read_object_list(FieldChecker& check, const json& body, const json& body_loc, const std::string& key,
                      const std::function<void(const json& item, const json& loc)>& read) {
  const json loc = loc_append(body_loc, key);
  const json* list = check.field(body, body_loc, key, true);
  if (!list || !check.is_array(*list, loc)) return;
  if (list->empty()) check.add(loc, "List should have at least 1 item after validation, not 0", "too_short");
  for (size_t i = 0; i < list->size(); ++i) {
    const json item_loc = loc_append(loc, i);
    const json& item = (*list)[i];
    if (check.is_object(item, item_loc)) read(item, item_loc);
  }
}

std::optional<std::string> read_text_content(FieldChecker& check, const json& value, const json& loc) {
  if (value.is_string()) {
    std::string text = value.get<std::string>();
    if (text.empty()) {
      check.add(loc, "String should have at least 1 character", "string_too_short");
      return std::nullopt;
    }
    return text;
  }
  if (!value.is_array()) {
    check.add(loc, "Input should be a valid string or a list of text blocks", "string_type");
    return std::nullopt;
  }
  if (value.empty()) {
    check.add(loc, "List should have at least 1 item after validation, not 0", "too_short");
    return std::nullopt;
  }
  std::string text;
  bool ok = true;
  for (size_t i = 0; i < value.size(); ++i) {
    const json block_loc = loc_append(loc, i);
    const json& block = value[i];
    if (!check.is_object(block, block_loc)) {
      ok = false;
      continue;
    }
    const json* type = check.field(block, block_loc, "type", true);
    if (type && !(type->is_string() && *type == "text")) {
      check.add(loc_append(block_loc, "type"), "Input should be 'text' (only text content is supported)",
                "literal_error");
      ok = false;
    }
    const json* block_text = check.field(block, block_loc, "text", true);
    std::optional<std::string> piece = block_text ? check.string(*block_text, loc_append(block_loc, "text"))
                                                  : std::nullopt;
    if (piece && piece->empty()) {
      check.add(loc_append(block_loc, "text"), "String should have at least 1 character", "string_too_short");
      piece.reset();
    }
    if (!type || !piece) {
      ok = false;
      continue;
    }
    if (!text.empty()) text += '\n';
    text += *piece;
  }
  if (!ok) return std::nullopt;
  return text;
}

void read_stop_sequences(FieldChecker& check, const json& value, const json& loc, bool allow_single_string,
                         std::vector<std::string>& out) {
  auto one = [&](const json& v, const json& l) {
    if (auto s = check.string(v, l)) {
      if (s->empty())
        check.add(l, "String should have at least 1 character", "string_too_short");
      else
        out.push_back(*s);
    }
  };
  if (allow_single_string && value.is_string()) return one(value, loc);
  if (!check.is_array(value, loc)) return;
  for (size_t i = 0; i < value.size(); ++i) one(value[i], loc_append(loc, i));
}

void apply_common_parameters(const CommonParameters& p, ChatRequest& request) {
  if (p.max_tokens) request.max_tokens = *p.max_tokens;
  if (p.temperature) request.sampling.temperature = *p.temperature;
  if (p.top_p) request.sampling.top_p = *p.top_p;
  if (p.top_k) request.sampling.top_k = *p.top_k;
  request.sampling.seed = p.seed;
  request.stream = p.stream;
  request.ignore_eos = p.ignore_eos;
  if (p.max_proposed) request.max_proposed = *p.max_proposed;
}

}  // namespace astrai
