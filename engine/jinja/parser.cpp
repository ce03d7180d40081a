// Recursive descent over the tokens, one function per jinja2 grammar rule
// (parse_or, parse_and, parse_not, parse_compare, parse_math1, parse_concat,
// parse_math2, parse_pow, parse_unary, parse_primary, parse_postfix,
// parse_filter_expr), so that precedence matches jinja2 exactly.
#include "engine/jinja/parser.h"

#include <set>

#include "engine/jinja/builtins.h"
#include "engine/jinja/error.h"

namespace astrai::jinja {

namespace {

ExprPtr make(Expr::Kind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : t_(tokens) {}

  Body parse_template() {
    Body body = subparse({});
    if (cur().type != TokenType::End) fail("unexpected '" + cur().value + "'");
    return body;
  }

 private:
  const Token& cur() const { return t_[pos_]; }
  const Token& peek(size_t k = 1) const { return t_[std::min(pos_ + k, t_.size() - 1)]; }
  [[noreturn]] void fail(const std::string& message) const { throw TemplateError(message, cur().line); }
  bool is_op(const char* op) const { return cur().type == TokenType::Operator && cur().value == op; }
  bool is_name(const char* name) const { return cur().type == TokenType::Name && cur().value == name; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    ++pos_;
    return true;
  }
  bool skip_name(const char* name) {
    if (!is_name(name)) return false;
    ++pos_;
    return true;
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) fail(std::string("expected '") + op + "', got " + describe(cur()));
  }
  void expect_block_end() {
    if (cur().type != TokenType::BlockEnd) fail("expected end of statement block, got " + describe(cur()));
    ++pos_;
  }
  std::string expect_name() {
    if (cur().type != TokenType::Name) fail("expected a name, got " + describe(cur()));
    return t_[pos_++].value;
  }
  static std::string describe(const Token& t) {
    switch (t.type) {
      case TokenType::End: return "end of template";
      case TokenType::BlockEnd: return "'%}'";
      case TokenType::VariableEnd: return "'}}'";
      case TokenType::String: return "a string";
      default: return "'" + t.value + "'";
    }
  }

  // ---- statements ----

  // Nodes until a block whose first name is in `ends` (left unconsumed, the
  // position at that name) or the end of the template.
  Body subparse(const std::set<std::string>& ends) {
    Body body;
    while (cur().type != TokenType::End) {
      const Token& tok = cur();
      if (tok.type == TokenType::Text) {
        auto n = std::make_unique<Node>();
        n->kind = Node::Kind::Text;
        n->line = tok.line;
        n->text = tok.value;
        body.push_back(std::move(n));
        ++pos_;
      } else if (tok.type == TokenType::VariableBegin) {
        ++pos_;
        auto n = std::make_unique<Node>();
        n->kind = Node::Kind::Output;
        n->line = tok.line;
        n->expr = parse_tuple(false, true);
        if (cur().type != TokenType::VariableEnd) fail("expected '}}', got " + describe(cur()));
        ++pos_;
        body.push_back(std::move(n));
      } else if (tok.type == TokenType::BlockBegin) {
        ++pos_;
        if (cur().type != TokenType::Name) fail("expected a statement name after '{%', got " + describe(cur()));
        if (ends.count(cur().value)) return body;
        body.push_back(statement());
      } else {
        fail("unexpected " + describe(tok));
      }
    }
    if (!ends.empty()) {
      std::string names;
      for (const auto& e : ends) names += (names.empty() ? "'" : " or '") + e + "'";
      fail("unexpected end of template: missing " + names);
    }
    return body;
  }

  // Deeply nested input (a template from an untrusted model file) must be an
  // error, not a stack overflow; jinja2 stops at Python's recursion limit.
  struct DepthGuard {
    explicit DepthGuard(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxDepth) p_.fail("the template nests deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    ~DepthGuard() { --p_.depth_; }
    Parser& p_;
  };
  static constexpr int kMaxDepth = 200;

  NodePtr statement() {
    const DepthGuard guard(*this);
    const Token& tok = cur();
    const std::string& name = tok.value;
    auto n = std::make_unique<Node>();
    n->line = tok.line;
    if (name == "if") return if_statement();
    if (name == "for") return for_statement();
    if (name == "set") return set_statement();
    if (name == "macro") return macro_statement();
    if (name == "break" || name == "continue") {
      ++pos_;
      n->kind = name == "break" ? Node::Kind::Break : Node::Kind::Continue;
      expect_block_end();
      return n;
    }
    if (name == "generation") {  // transformers' AssistantTracker extension: renders its body
      ++pos_;
      expect_block_end();
      n->kind = Node::Kind::Scope;
      n->body = subparse({"endgeneration"});
      ++pos_;
      expect_block_end();
      return n;
    }
    static const std::set<std::string> known_unsupported = {
        "include", "extends", "block", "import", "from", "call", "filter", "with", "autoescape", "do", "print", "trans"};
    if (known_unsupported.count(name)) fail("the '" + name + "' tag is not supported by this Jinja engine");
    fail("unknown tag '" + name + "'");
  }

  NodePtr if_statement() {
    auto n = std::make_unique<Node>();
    n->kind = Node::Kind::If;
    n->line = cur().line;
    ++pos_;  // "if"
    while (true) {
      ExprPtr cond = parse_tuple(false, false);
      expect_block_end();
      Body body = subparse({"elif", "else", "endif"});
      n->branches.emplace_back(std::move(cond), std::move(body));
      const std::string which = t_[pos_++].value;
      if (which == "elif") continue;
      if (which == "else") {
        expect_block_end();
        n->else_body = subparse({"endif"});
        ++pos_;
      }
      expect_block_end();
      return n;
    }
  }

  Target assign_target(bool with_namespace, const std::set<std::string>& end_names) {
    Target target;
    if (with_namespace && cur().type == TokenType::Name && peek().type == TokenType::Operator && peek().value == ".") {
      target.names.push_back(expect_name());
      ++pos_;
      target.attribute = expect_name();
      return target;
    }
    const bool paren = skip_op("(");
    while (true) {
      target.names.push_back(expect_name());
      if (!skip_op(",")) break;
      target.tuple = true;
      if ((paren && is_op(")")) || (cur().type == TokenType::Name && end_names.count(cur().value)) || is_op("="))
        break;
    }
    if (paren) {
      expect_op(")");
      target.tuple = true;
    }
    return target;
  }

  NodePtr for_statement() {
    auto n = std::make_unique<Node>();
    n->kind = Node::Kind::For;
    n->line = cur().line;
    ++pos_;  // "for"
    n->target = assign_target(false, {"in"});
    if (!skip_name("in")) fail("expected 'in' in the for loop, got " + describe(cur()));
    n->expr = parse_tuple(false, false, {"recursive"});
    if (skip_name("if")) n->filter = parse_expression(true);
    if (is_name("recursive")) fail("recursive for loops are not supported by this Jinja engine");
    expect_block_end();
    n->body = subparse({"endfor", "else"});
    if (t_[pos_++].value == "else") {
      expect_block_end();
      n->else_body = subparse({"endfor"});
      ++pos_;
    }
    expect_block_end();
    return n;
  }

  NodePtr set_statement() {
    auto n = std::make_unique<Node>();
    n->line = cur().line;
    ++pos_;  // "set"
    n->target = assign_target(true, {});
    if (skip_op("=")) {
      n->kind = Node::Kind::Set;
      n->expr = parse_tuple(false, true);
      expect_block_end();
      return n;
    }
    if (is_op("|")) fail("filtered set blocks ({% set x | filter %}) are not supported by this Jinja engine");
    n->kind = Node::Kind::SetBlock;
    expect_block_end();
    n->body = subparse({"endset"});
    ++pos_;
    expect_block_end();
    return n;
  }

  NodePtr macro_statement() {
    auto n = std::make_unique<Node>();
    n->kind = Node::Kind::Macro;
    n->line = cur().line;
    ++pos_;  // "macro"
    n->text = expect_name();
    expect_op("(");
    while (!is_op(")")) {
      if (!n->params.empty()) expect_op(",");
      if (is_op(")")) break;
      MacroParam p;
      p.name = expect_name();
      if (skip_op("=")) p.default_value = parse_expression(true);
      else if (!n->params.empty() && n->params.back().default_value)
        fail("non-default macro argument '" + p.name + "' follows a default argument");
      n->params.push_back(std::move(p));
    }
    ++pos_;
    expect_block_end();
    n->body = subparse({"endmacro"});
    ++pos_;
    if (cur().type == TokenType::Name) ++pos_;  // {% endmacro name %}
    expect_block_end();
    return n;
  }

  // ---- expressions ----

  bool tuple_end(const std::set<std::string>& extra) const {
    const Token& t = cur();
    if (t.type == TokenType::VariableEnd || t.type == TokenType::BlockEnd || t.type == TokenType::End) return true;
    if (t.type == TokenType::Operator && t.value == ")") return true;
    return t.type == TokenType::Name && extra.count(t.value);
  }

  // jinja2's parse_tuple: a, b, c is a tuple; a single expression is itself.
  ExprPtr parse_tuple(bool explicit_parentheses, bool with_condexpr, const std::set<std::string>& extra = {}) {
    const int line = cur().line;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) expect_op(",");
      if (tuple_end(extra)) break;
      items.push_back(parse_expression(with_condexpr));
      if (is_op(",")) is_tuple = true;
      else break;
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_parentheses) fail("expected an expression, got " + describe(cur()));
    }
    auto e = make(Expr::Kind::Tuple, line);
    e->children = std::move(items);
    return e;
  }

  ExprPtr parse_expression(bool with_condexpr) { return with_condexpr ? parse_condexpr() : parse_or(); }

  ExprPtr parse_condexpr() {
    ExprPtr expr = parse_or();
    while (is_name("if")) {
      const int line = cur().line;
      ++pos_;
      auto c = make(Expr::Kind::Conditional, line);
      c->children.push_back(parse_or());
      c->children.push_back(std::move(expr));
      c->children.push_back(skip_name("else") ? parse_condexpr() : nullptr);
      expr = std::move(c);
    }
    return expr;
  }

  ExprPtr binary(const std::string& op, ExprPtr left, ExprPtr right, int line) {
    auto e = make(Expr::Kind::Binary, line);
    e->name = op;
    e->children.push_back(std::move(left));
    e->children.push_back(std::move(right));
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (is_name("or")) {
      const int line = t_[pos_++].line;
      left = binary("or", std::move(left), parse_and(), line);
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (is_name("and")) {
      const int line = t_[pos_++].line;
      left = binary("and", std::move(left), parse_not(), line);
    }
    return left;
  }

  ExprPtr parse_not() {
    const DepthGuard guard(*this);
    if (is_name("not")) {
      auto e = make(Expr::Kind::Unary, t_[pos_++].line);
      e->name = "not";
      e->children.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const int line = cur().line;
    ExprPtr first = parse_math1();
    auto cmp = make(Expr::Kind::Compare, line);
    cmp->children.push_back(std::move(first));
    while (true) {
      static const std::set<std::string> ops = {"==", "!=", "<", "<=", ">", ">="};
      if (cur().type == TokenType::Operator && ops.count(cur().value)) {
        cmp->ops.push_back(t_[pos_++].value);
      } else if (is_name("in")) {
        ++pos_;
        cmp->ops.push_back("in");
      } else if (is_name("not") && peek().type == TokenType::Name && peek().value == "in") {
        pos_ += 2;
        cmp->ops.push_back("not in");
      } else {
        break;
      }
      cmp->children.push_back(parse_math1());
    }
    if (cmp->ops.empty()) return std::move(cmp->children[0]);
    return cmp;
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& op = t_[pos_++];
      left = binary(op.value, std::move(left), parse_concat(), op.line);
    }
    return left;
  }

  ExprPtr parse_concat() {
    ExprPtr left = parse_math2();
    while (is_op("~")) {
      const int line = t_[pos_++].line;
      left = binary("~", std::move(left), parse_math2(), line);
    }
    return left;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& op = t_[pos_++];
      left = binary(op.value, std::move(left), parse_pow(), op.line);
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (is_op("**")) {
      const int line = t_[pos_++].line;
      left = binary("**", std::move(left), parse_unary(true), line);
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    const DepthGuard guard(*this);
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      auto e = make(Expr::Kind::Unary, cur().line);
      e->name = t_[pos_++].value;
      e->children.push_back(parse_unary(false));
      node = std::move(e);
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    const Token& tok = cur();
    switch (tok.type) {
      case TokenType::Name: {
        ++pos_;
        if (tok.value == "true" || tok.value == "True") return literal(Value(true), tok.line);
        if (tok.value == "false" || tok.value == "False") return literal(Value(false), tok.line);
        if (tok.value == "none" || tok.value == "None") return literal(Value::none(), tok.line);
        auto e = make(Expr::Kind::Name, tok.line);
        e->name = tok.value;
        return e;
      }
      case TokenType::String: {
        std::string s;
        while (cur().type == TokenType::String) s += t_[pos_++].value;  // adjacent literals concatenate
        return literal(Value(std::move(s)), tok.line);
      }
      case TokenType::Integer: ++pos_; return literal(Value(tok.int_value), tok.line);
      case TokenType::Float: ++pos_; return literal(Value(tok.float_value), tok.line);
      case TokenType::Operator:
        if (tok.value == "(") {
          ++pos_;
          ExprPtr e = parse_tuple(true, true);
          expect_op(")");
          return e;
        }
        if (tok.value == "[") return list_literal();
        if (tok.value == "{") return dict_literal();
        [[fallthrough]];
      default: fail("unexpected " + describe(tok));
    }
  }

  static ExprPtr literal(Value v, int line) {
    auto e = make(Expr::Kind::Literal, line);
    e->literal = std::move(v);
    return e;
  }

  ExprPtr list_literal() {
    auto e = make(Expr::Kind::List, cur().line);
    ++pos_;
    while (!is_op("]")) {
      if (!e->children.empty()) expect_op(",");
      if (is_op("]")) break;
      e->children.push_back(parse_expression(true));
    }
    ++pos_;
    return e;
  }

  ExprPtr dict_literal() {
    auto e = make(Expr::Kind::Dict, cur().line);
    ++pos_;
    while (!is_op("}")) {
      if (!e->children.empty()) expect_op(",");
      if (is_op("}")) break;
      e->children.push_back(parse_expression(true));
      expect_op(":");
      e->children.push_back(parse_expression(true));
    }
    ++pos_;
    return e;
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(".")) {
        const int line = t_[pos_++].line;
        if (cur().type == TokenType::Name) {
          auto e = make(Expr::Kind::Attribute, line);
          e->name = t_[pos_++].value;
          e->children.push_back(std::move(node));
          node = std::move(e);
        } else if (cur().type == TokenType::Integer) {  // foo.0 is foo[0]
          auto e = make(Expr::Kind::Item, line);
          e->children.push_back(std::move(node));
          e->children.push_back(literal(Value(t_[pos_++].int_value), line));
          node = std::move(e);
        } else {
          fail("expected an attribute name after '.', got " + describe(cur()));
        }
      } else if (is_op("[")) {
        node = subscript(std::move(node));
      } else if (is_op("(")) {
        node = call(std::move(node), Expr::Kind::Call);
      } else {
        return node;
      }
    }
  }

  // [index] or [start:stop:step].
  ExprPtr subscript(ExprPtr node) {
    const int line = t_[pos_++].line;
    auto part = [&]() -> ExprPtr { return is_op(":") || is_op("]") ? nullptr : parse_expression(true); };
    ExprPtr start = part();
    if (!is_op(":")) {
      if (!start) fail("expected a subscript, got " + describe(cur()));
      if (is_op(",")) fail("tuple subscripts are not supported by this Jinja engine");
      expect_op("]");
      auto e = make(Expr::Kind::Item, line);
      e->children.push_back(std::move(node));
      e->children.push_back(std::move(start));
      return e;
    }
    ++pos_;
    ExprPtr stop = part();
    ExprPtr step;
    if (skip_op(":")) step = part();
    expect_op("]");
    auto e = make(Expr::Kind::Slice, line);
    e->children.push_back(std::move(node));
    e->children.push_back(std::move(start));
    e->children.push_back(std::move(stop));
    e->children.push_back(std::move(step));
    return e;
  }

  // (args, key=value) after a callee, filter or test.
  void call_args(Expr& e) {
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (is_op(")")) break;
      if (is_op("*") || is_op("**")) fail("*args and **kwargs in calls are not supported by this Jinja engine");
      if (cur().type == TokenType::Name && peek().type == TokenType::Operator && peek().value == "=") {
        std::string key = t_[pos_].value;
        pos_ += 2;
        e.kwargs.emplace_back(std::move(key), parse_expression(true));
      } else {
        if (!e.kwargs.empty()) fail("positional argument follows keyword argument");
        e.children.push_back(parse_expression(true));
      }
    }
    ++pos_;
  }

  ExprPtr call(ExprPtr callee, Expr::Kind kind) {
    auto e = make(kind, cur().line);
    e->children.push_back(std::move(callee));
    call_args(*e);
    return e;
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is_op("|")) {
        const int line = t_[pos_++].line;
        auto e = make(Expr::Kind::Filter, line);
        e->name = expect_name();
        while (skip_op(".")) (e->name += '.') += expect_name();  // not "." + name: gcc 12 -O3 warns falsely (-Wrestrict)
        e->children.push_back(std::move(node));
        if (is_op("(")) call_args(*e);
        node = std::move(e);
      } else if (is_name("is")) {
        const int line = t_[pos_++].line;
        auto e = make(Expr::Kind::Test, line);
        e->negated = skip_name("not");
        e->name = expect_name();
        while (skip_op(".")) (e->name += '.') += expect_name();  // not "." + name: gcc 12 -O3 warns falsely (-Wrestrict)
        e->children.push_back(std::move(node));
        const Token& t = cur();
        if (is_op("(")) {
          call_args(*e);
        } else if ((t.type == TokenType::Name || t.type == TokenType::String || t.type == TokenType::Integer ||
                    t.type == TokenType::Float || is_op("[") || is_op("{")) &&
                   !(t.type == TokenType::Name && (t.value == "else" || t.value == "or" || t.value == "and"))) {
          if (is_name("is")) fail("you cannot chain multiple tests with 'is'");
          e->children.push_back(parse_postfix(parse_primary()));  // `x is divisibleby 3`
        }
        node = std::move(e);
      } else if (is_op("(")) {
        node = call(std::move(node), Expr::Kind::Call);
      } else {
        return node;
      }
    }
  }

  const std::vector<Token>& t_;
  size_t pos_ = 0;
  int depth_ = 0;
};

// jinja2 refuses a filter or test name it does not know when it compiles the
// template, except inside a "soft" frame (an if statement's test and branches,
// a conditional expression), where the error waits until it runs. For loops,
// macros and set blocks open frames that are not soft.
void check_names(const Expr& e, bool soft) {
  const bool inner_soft = soft || e.kind == Expr::Kind::Conditional;
  if (!inner_soft && e.kind == Expr::Kind::Filter && !is_jinja2_filter(e.name))
    throw TemplateError("no filter named '" + e.name + "'", e.line);
  if (!inner_soft && e.kind == Expr::Kind::Test && !is_jinja2_test(e.name))
    throw TemplateError("no test named '" + e.name + "'", e.line);
  for (const auto& c : e.children)
    if (c) check_names(*c, inner_soft);
  for (const auto& [k, v] : e.kwargs) check_names(*v, inner_soft);
}

void check_names(const Body& body, bool soft) {
  for (const auto& n : body) {
    switch (n->kind) {
      case Node::Kind::Output:
      case Node::Kind::Set: check_names(*n->expr, soft); break;
      case Node::Kind::If:
        for (const auto& [cond, branch] : n->branches) {
          check_names(*cond, true);
          check_names(branch, true);
        }
        check_names(n->else_body, true);
        break;
      case Node::Kind::For:
        check_names(*n->expr, soft);
        if (n->filter) check_names(*n->filter, false);
        check_names(n->body, false);
        check_names(n->else_body, soft);
        break;
      case Node::Kind::SetBlock: check_names(n->body, false); break;
      case Node::Kind::Macro:
        for (const auto& p : n->params)
          if (p.default_value) check_names(*p.default_value, false);
        check_names(n->body, false);
        break;
      case Node::Kind::Scope: check_names(n->body, soft); break;
      default: break;
    }
  }
}

}  // namespace

Body parse(const std::vector<Token>& tokens) {
  Body body = Parser(tokens).parse_template();
  check_names(body, false);
  return body;
}

}  // namespace astrai::jinja
