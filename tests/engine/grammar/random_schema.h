// Random JSON Schemas over the documented subset, and random instances of
// them written as JSON text: the test's own generator, independent of the
// grammar compiler (python3-jsonschema then judges the instances too).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/engine/grammar/random_regex.h"

namespace astrai::test {

using OrderedJson = nlohmann::ordered_json;

class SchemaGenerator {
 public:
  explicit SchemaGenerator(uint64_t seed) : rng_(seed), regex_(seed ^ 0x5DEECE66Dull, true) {}

  // A root schema; sometimes with a recursive $defs entry it refers to.
  OrderedJson make_root() {
    if (coin(5)) {
      OrderedJson node = {{"type", "object"},
                          {"properties",
                           {{"value", make(1)}, {"next", {{"anyOf", {{{"$ref", "#/$defs/node"}}, {{"type", "null"}}}}}}}},
                          {"required", {"value", "next"}},
                          {"additionalProperties", false}};
      return {{"$defs", {{"node", node}}}, {"type", "array"}, {"items", {{"$ref", "#/$defs/node"}}}, {"maxItems", 2}};
    }
    return make(3);
  }

  OrderedJson make(int depth) {
    const int pick = int(rng_() % (depth <= 0 ? 7 : 11));
    switch (pick) {
      case 0: return {{"type", "null"}};
      case 1: return {{"type", "boolean"}};
      case 2: {
        OrderedJson s = {{"type", "integer"}};
        if (coin(2)) s[coin(2) ? "minimum" : "exclusiveMinimum"] = int(rng_() % 2001) - 1000;
        if (coin(2)) {
          const int lo = s.contains("minimum") ? s["minimum"].get<int>() : s.contains("exclusiveMinimum") ? s["exclusiveMinimum"].get<int>() + 1 : -1000;
          s[coin(2) ? "maximum" : "exclusiveMaximum"] = lo + int(rng_() % 3000) + 1;
        }
        return s;
      }
      case 3: return {{"type", "number"}};
      case 4: {
        OrderedJson s = {{"type", "string"}};
        if (coin(3)) {
          auto re = regex_.make(2);
          std::string p = RegexGenerator::pattern(re);
          if (coin(2)) p = "^" + p + "$";
          s["pattern"] = p;
          patterns_.emplace(p, re);
        } else if (coin(2)) {
          const int lo = int(rng_() % 4);
          s["minLength"] = lo;
          if (coin(2)) s["maxLength"] = lo + int(rng_() % 5);
        }
        return s;
      }
      case 5: {
        OrderedJson values = OrderedJson::array();
        const int n = 1 + int(rng_() % 4);
        for (int i = 0; i < n; ++i) values.push_back(scalar());
        return coin(4) ? OrderedJson{{"const", values[0]}} : OrderedJson{{"enum", values}};
      }
      case 6: {
        OrderedJson s = {{"type", {"string", "null"}}};
        if (coin(2)) s = {{"type", "integer"}, {"nullable", true}};
        return s;
      }
      case 7:
      case 8: {
        OrderedJson props = OrderedJson::object(), required = OrderedJson::array();
        const int n = int(rng_() % 5);
        for (int i = 0; i < n; ++i) {
          const std::string name = key_name(i);
          props[name] = make(depth - 1);
          if (coin(2)) required.push_back(name);
        }
        OrderedJson s = {{"type", "object"}, {"properties", props}};
        if (!required.empty()) s["required"] = required;
        const int extra = int(rng_() % 4);
        if (extra == 1) s["additionalProperties"] = false;
        if (extra == 2) s["additionalProperties"] = true;
        if (extra == 3) s["additionalProperties"] = make(0);
        return s;
      }
      case 9: {
        OrderedJson s = {{"type", "array"}};
        if (coin(3)) {
          OrderedJson prefix = OrderedJson::array();
          const int k = 1 + int(rng_() % 3);
          for (int i = 0; i < k; ++i) prefix.push_back(make(depth - 1));
          s["prefixItems"] = prefix;
          if (coin(2)) s["items"] = coin(2) ? OrderedJson(false) : make(0);
        } else {
          s["items"] = make(depth - 1);
        }
        const int lo = int(rng_() % 3);
        if (coin(2)) s["minItems"] = lo;
        if (coin(2)) s["maxItems"] = lo + int(rng_() % 4);
        // items: false allows no more than the prefix (more would be unsatisfiable).
        if (s.contains("items") && s["items"] == false && s.contains("minItems"))
          s["minItems"] = std::min(s["minItems"].get<size_t>(), s["prefixItems"].size());
        return s;
      }
      default: {
        OrderedJson branches = OrderedJson::array();
        const int n = 2 + int(rng_() % 2);
        for (int i = 0; i < n; ++i) branches.push_back(make(depth - 1));
        return {{"anyOf", branches}};
      }
    }
  }

  // A random instance of `schema` (resolved against `root`) as JSON text.
  // Past kMaxRefDepth nested $refs it takes the shortest way out: arrays
  // their fewest items, anyOf a branch with no $ref where there is one. A
  // recursive schema's instances are otherwise a branching process: a node
  // with 0-2 children, each a node, has one child on average, a critical
  // process whose depth has a tail heavy enough that one run in a thousand
  // or so recursed deep enough to overflow the stack (test_grammar, llama2
  // seed 695141079: ASTRAI_WALK_SEED replays it).
  static constexpr int kMaxRefDepth = 8;
  std::string instance(const OrderedJson& schema, const OrderedJson& root, int indent = 0) {
    if (schema.contains("$ref")) {
      const std::string ref = schema["$ref"].get<std::string>().substr(1);
      ++ref_depth_;
      std::string out = instance(root.at(OrderedJson::json_pointer(ref)), root, indent);
      --ref_depth_;
      return out;
    }
    if (schema.contains("anyOf")) {
      const OrderedJson& branches = schema["anyOf"];
      if (ref_depth_ >= kMaxRefDepth)
        for (const auto& branch : branches)
          if (branch.dump().find("$ref") == std::string::npos) return instance(branch, root, indent);
      return instance(branches[rng_() % branches.size()], root, indent);
    }
    if (schema.contains("enum")) return schema["enum"][rng_() % schema["enum"].size()].dump();
    if (schema.contains("const")) return schema["const"].dump();
    if (schema.value("nullable", false) && coin(3)) return "null";
    std::string type;
    if (schema["type"].is_array())
      type = schema["type"][rng_() % schema["type"].size()].get<std::string>();
    else
      type = schema["type"].get<std::string>();
    if (type == "null") return "null";
    if (type == "boolean") return coin(2) ? "true" : "false";
    if (type == "integer") return std::to_string(integer(schema));
    if (type == "number") return number();
    if (type == "string") return string(schema);
    if (type == "array") return array(schema, root, indent);
    return object(schema, root, indent);
  }

  // Instances of a pattern the generator did not make (hand-written schemas).
  void add_pattern_sampler(const std::string& pattern, std::function<std::string(std::mt19937_64&)> sampler) {
    samplers_[pattern] = std::move(sampler);
  }

  bool coin(int one_in) { return rng_() % uint64_t(one_in) == 0; }
  std::mt19937_64& rng() { return rng_; }

 private:
  std::mt19937_64 rng_;
  int ref_depth_ = 0;  // $refs resolved on the way to the value being made
  RegexGenerator regex_;
  std::map<std::string, RandomRegex> patterns_;
  std::map<std::string, std::function<std::string(std::mt19937_64&)>> samplers_;

  std::string key_name(int i) {
    static const std::vector<std::string> names = {"id", "name", "a/b", "tags", "x y", "é", "quote\"d", "n_1"};
    return names[(size_t(i) + rng_()) % names.size()] + std::to_string(i);
  }

  OrderedJson scalar() {
    switch (rng_() % 5) {
      case 0: return nullptr;
      case 1: return coin(2);
      case 2: return int(rng_() % 200) - 100;
      case 3: return random_text(int(rng_() % 6));
      default: return "red";
    }
  }

  std::string random_text(int chars) {
    static const std::vector<uint32_t> alphabet = {'a', 'Z', '0', ' ', '"', '\\', '/', '\n', '\t', 0x01, 0x1F, 0x7F,
                                                   0xE9, 0x4E2D, 0x1F600};
    std::string s;
    for (int i = 0; i < chars; ++i) s += astrai::encode_utf8(char32_t(alphabet[rng_() % alphabet.size()]));
    return s;
  }

  // Whitespace between JSON tokens: none, a little, or pretty-printing's newline and indent.
  std::string ws(int indent) {
    switch (rng_() % 4) {
      case 0: return "";
      case 1: return " ";
      case 2: return "\n" + std::string(size_t(std::min(indent, 19)), ' ');
      default: return std::string(rng_() % 3, '\t');
    }
  }

  int64_t integer(const OrderedJson& s) {
    int64_t lo = -1000000, hi = 1000000;
    if (s.contains("minimum")) lo = s["minimum"].get<int64_t>();
    if (s.contains("exclusiveMinimum")) lo = s["exclusiveMinimum"].get<int64_t>() + 1;
    if (s.contains("maximum")) hi = s["maximum"].get<int64_t>();
    if (s.contains("exclusiveMaximum")) hi = s["exclusiveMaximum"].get<int64_t>() - 1;
    return lo + int64_t(rng_() % uint64_t(hi - lo + 1));
  }

  std::string digits(int n, bool leading_nonzero) {
    std::string d;
    for (int i = 0; i < n; ++i) d += char('0' + (i == 0 && leading_nonzero ? 1 + rng_() % 9 : rng_() % 10));
    return d;
  }
  std::string number() {
    std::string s = coin(3) ? "-" : "";
    s += coin(4) ? "0" : digits(1 + int(rng_() % 6), true);
    if (coin(2)) s += "." + digits(1 + int(rng_() % 6), false);
    if (coin(3)) s += std::string(coin(2) ? "e" : "E") + (coin(2) ? "" : coin(2) ? "+" : "-") + digits(1 + int(rng_() % 2), false);
    return s;
  }

  std::string string(const OrderedJson& s) {
    if (s.contains("pattern")) {
      const std::string p = s["pattern"].get<std::string>();
      if (samplers_.contains(p)) return OrderedJson(samplers_.at(p)(rng_)).dump();
      auto& re = patterns_.at(p);
      std::string text = regex_.sample(re);
      if (p.front() != '^') text = random_text(int(rng_() % 3)) + text + random_text(int(rng_() % 3));
      return OrderedJson(text).dump();
    }
    const int lo = s.value("minLength", 0);
    const int hi = s.contains("maxLength") ? s["maxLength"].get<int>() : lo + 6;
    return OrderedJson(random_text(lo + int(rng_() % uint64_t(hi - lo + 1)))).dump();
  }

  std::string array(const OrderedJson& s, const OrderedJson& root, int indent) {
    const size_t k = s.contains("prefixItems") ? s["prefixItems"].size() : 0;
    const bool more = !(s.contains("items") && s["items"].is_boolean() && !s["items"].get<bool>());
    int lo = s.value("minItems", 0);
    int hi = s.contains("maxItems") ? s["maxItems"].get<int>() : lo + 3;
    if (!more) hi = std::min(hi, int(k));
    if (hi < lo) hi = lo;
    const int n = ref_depth_ >= kMaxRefDepth ? lo : lo + int(rng_() % uint64_t(hi - lo + 1));
    std::string out = "[" + ws(indent + 2);
    static const OrderedJson any_value = {{"type", "integer"}};
    for (int i = 0; i < n; ++i) {
      if (i) out += ws(indent + 2) + "," + ws(indent + 2);
      const OrderedJson& item = size_t(i) < k ? s["prefixItems"][size_t(i)] : s.contains("items") && !s["items"].is_boolean() ? s["items"] : any_value;
      out += instance(item, root, indent + 2);
    }
    return out + (n ? ws(indent) : "") + "]";
  }

  std::string object(const OrderedJson& s, const OrderedJson& root, int indent) {
    std::set<std::string> required, names;
    if (s.contains("required"))
      for (const auto& r : s["required"]) required.insert(r.get<std::string>());
    std::vector<std::string> members;
    if (s.contains("properties"))
      for (const auto& [name, sub] : s["properties"].items()) {
        names.insert(name);
        if (required.contains(name) || coin(2))
          members.push_back(OrderedJson(name).dump() + ws(indent + 2) + ":" + ws(indent + 2) + instance(sub, root, indent + 2));
      }
    if (s.contains("additionalProperties") && !(s["additionalProperties"].is_boolean() && !s["additionalProperties"].get<bool>())) {
      const int extra = int(rng_() % 3);
      for (int i = 0; i < extra; ++i) {
        std::string key = "k" + std::to_string(rng_() % 100);
        if (names.contains(key)) continue;
        const auto& a = s["additionalProperties"];
        const std::string value = a.is_boolean() ? number() : instance(a, root, indent + 2);
        members.push_back("\"" + key + "\"" + ws(indent + 2) + ":" + ws(indent + 2) + value);
      }
    }
    std::string out = "{" + ws(indent + 2);
    for (size_t i = 0; i < members.size(); ++i) out += (i ? ws(indent + 2) + "," + ws(indent + 2) : "") + members[i];
    return out + (members.empty() ? "" : ws(indent)) + "}";
  }
};

}  // namespace astrai::test
