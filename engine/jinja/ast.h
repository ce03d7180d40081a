// The parsed template: expressions and statements, as jinja2's parser builds
// them (same precedence, same node meanings; see parser.cpp).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/jinja/value.h"

namespace astrai::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    Literal,    // value
    Name,       // name
    List,       // [children...]
    Tuple,      // (children...)
    Dict,       // {keys[i]: children[i]}: children are key, value, key, value...
    Attribute,  // children[0].name
    Item,       // children[0][children[1]]
    Slice,      // children[0][start:stop:step]; absent parts are nullptr
    Call,       // children[0](children[1..], kwargs)
    Filter,     // children[0] | name(children[1..], kwargs)
    Test,       // children[0] is [not] name(children[1..], kwargs)
    Unary,      // name in {"not", "-", "+"} applied to children[0]
    Binary,     // children[0] name children[1]: and or + - * / // % ** ~ in "not in"
    Compare,    // children[0] ops[0] children[1] ops[1] children[2] ... (chained)
    Conditional,  // children[1] if children[0] else children[2] (children[2] may be nullptr)
  };
  Kind kind;
  int line = 0;
  Value literal;
  std::string name;
  std::vector<ExprPtr> children;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;  // Compare
  bool negated = false;          // Test: "is not"
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

// An assignment target: a name, a tuple of names, or namespace.attribute.
struct Target {
  std::vector<std::string> names;  // one name, or several for tuple unpacking
  bool tuple = false;
  std::string attribute;  // non-empty: names[0].attribute = ... (namespace assignment)
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // nullptr: required
};

struct Node {
  enum class Kind {
    Text,      // text
    Output,    // {{ expr }}
    If,        // branches (condition, body); else_body
    For,       // {% for target in expr [if filter] %} body {% else %} else_body {% endfor %}
    Set,       // {% set target = expr %}
    SetBlock,  // {% set target %} body {% endset %}
    Macro,     // {% macro name(params) %} body {% endmacro %}
    Break,
    Continue,
    Scope,     // a body rendered in place ({% generation %} of transformers' AssistantTracker)
  };
  Kind kind;
  int line = 0;
  std::string text;  // Text; Macro name
  ExprPtr expr;      // Output, Set, For (iterable)
  ExprPtr filter;    // For: the inline `if`
  Target target;     // Set, SetBlock, For
  std::vector<std::pair<ExprPtr, Body>> branches;  // If
  Body body;
  Body else_body;
  std::vector<MacroParam> params;  // Macro
};

}  // namespace astrai::jinja
