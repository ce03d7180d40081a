#include "engine/grammar/grammar.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <tuple>
#include <sstream>

namespace astrai::grammar {

Expr bytes(std::vector<ByteRange> ranges) {
  Expr e;
  e.kind = Expr::Kind::Bytes;
  e.ranges = std::move(ranges);
  return e;
}
Expr byte_char(uint8_t b) { return bytes({{b, b}}); }
Expr literal(const std::string& text) {
  Expr e;
  for (const char c : text) e.items.push_back(byte_char(uint8_t(c)));
  return e;
}
Expr seq(std::vector<Expr> items) {
  Expr e;
  e.items = std::move(items);
  return e;
}
Expr alt(std::vector<Expr> items) {
  Expr e;
  e.kind = Expr::Kind::Alt;
  e.items = std::move(items);
  return e;
}
Expr repeat(Expr inner, int min, int max) {
  Expr e;
  e.kind = Expr::Kind::Repeat;
  e.items.push_back(std::move(inner));
  e.min = min;
  e.max = max;
  return e;
}
Expr call(int rule) {
  Expr e;
  e.kind = Expr::Kind::Call;
  e.rule = rule;
  return e;
}

size_t Grammar::state_count() const {
  size_t n = 0;
  for (const auto& r : rules) n += r.states.size();
  return n;
}

std::string Grammar::dump() const {
  std::ostringstream out;
  for (size_t r = 0; r < rules.size(); ++r) {
    out << "rule " << r << " '" << rules[r].name << "'" << (int(r) == root ? " (root)" : "") << "\n";
    for (size_t s = 0; s < rules[r].states.size(); ++s) {
      const State& st = rules[r].states[s];
      out << "  " << s << (st.final ? " final" : "") << ":";
      for (const auto& e : st.bytes) out << " [" << int(e.lo) << "-" << int(e.hi) << "]->" << e.target;
      for (const auto& c : st.calls) out << " call " << c.rule << "->" << c.target;
      out << "\n";
    }
  }
  return out.str();
}

namespace {

// Thompson's construction: an NFA with epsilon moves, built from an Expr.
struct EpsilonNfa {
  struct Node {
    std::vector<ByteEdge> bytes;
    std::vector<CallEdge> calls;
    std::vector<int32_t> eps;
  };
  std::vector<Node> nodes;
  size_t& budget_used;
  size_t budget;

  int add() {
    if (++budget_used > budget)
      throw GrammarTooLarge("the grammar exceeds " + std::to_string(budget) + " automaton states");
    nodes.emplace_back();
    return int(nodes.size()) - 1;
  }
  // Builds `e` starting at `from`; returns its end node.
  int build(const Expr& e, int from) {
    switch (e.kind) {
      case Expr::Kind::Bytes: {
        const int to = add();
        for (const auto& r : e.ranges) nodes[size_t(from)].bytes.push_back({r.lo, r.hi, to});
        return to;
      }
      case Expr::Kind::Call: {
        const int to = add();
        nodes[size_t(from)].calls.push_back({e.rule, to});
        return to;
      }
      case Expr::Kind::Seq: {
        int cur = from;
        for (const auto& item : e.items) cur = build(item, cur);
        return cur;
      }
      case Expr::Kind::Alt: {
        const int to = add();
        for (const auto& item : e.items) nodes[size_t(branch(item, from))].eps.push_back(to);
        return to;
      }
      case Expr::Kind::Repeat: {
        int cur = from;
        for (int i = 0; i < e.min; ++i) cur = branch(e.items[0], cur);
        if (e.max == Expr::kUnbounded) {
          // A fresh loop node, so that the loop never reaches into what precedes it.
          const int loop = add();
          nodes[size_t(cur)].eps.push_back(loop);
          nodes[size_t(branch(e.items[0], loop))].eps.push_back(loop);
          return loop;
        }
        const int to = add();
        nodes[size_t(cur)].eps.push_back(to);
        for (int i = e.min; i < e.max; ++i) {
          cur = branch(e.items[0], cur);
          nodes[size_t(cur)].eps.push_back(to);
        }
        return to;
      }
    }
    return from;
  }
  // `e` from a fresh start node entered by an epsilon move from `from`: a loop
  // inside `e` then cannot run back into other branches that share `from`.
  int branch(const Expr& e, int from) {
    const int start = add();
    nodes[size_t(from)].eps.push_back(start);
    return build(e, start);
  }
};

// Bounds on epsilon removal: a state's closure can span most of a rule (a
// long chain of optional parts: (?:(?:a?){400}){100}), and then its edges are
// copied into each state of the chain. Past these it is a schema too large.
constexpr size_t kMaxClosureWork = 20'000'000;  // closure nodes visited, all states together
constexpr size_t kMaxEdges = 2'000'000;         // edges of the epsilon-free automaton

// The epsilon-free automaton of `nfa` from node 0 ending at `end`; only reachable states kept.
std::vector<State> remove_epsilons(const EpsilonNfa& nfa, int end) {
  size_t work = 0, edges = 0;
  const size_t n = nfa.nodes.size();
  std::vector<int> index(n, -1), order;
  std::vector<State> states;
  std::vector<int> stack, seen_mark(n, -1);
  auto visit = [&](int node) {
    if (index[size_t(node)] < 0) {
      index[size_t(node)] = int(order.size());
      order.push_back(node);
    }
  };
  visit(0);
  for (size_t k = 0; k < order.size(); ++k) {
    State st;
    stack.assign(1, order[k]);
    const int mark = int(k);
    seen_mark[size_t(order[k])] = mark;
    while (!stack.empty()) {
      const int v = stack.back();
      stack.pop_back();
      const auto& node = nfa.nodes[size_t(v)];
      edges += node.bytes.size() + node.calls.size();
      if (++work > kMaxClosureWork || edges > kMaxEdges)
        throw GrammarTooLarge("the grammar's automaton exceeds " + std::to_string(kMaxEdges) + " edges");
      if (v == end) st.final = true;
      for (const auto& e : node.bytes) {
        visit(e.target);
        st.bytes.push_back({e.lo, e.hi, index[size_t(e.target)]});
      }
      for (const auto& c : node.calls) {
        visit(c.target);
        st.calls.push_back({c.rule, index[size_t(c.target)]});
      }
      for (const int w : node.eps)
        if (seen_mark[size_t(w)] != mark) {
          seen_mark[size_t(w)] = mark;
          stack.push_back(w);
        }
    }
    auto by_fields = [](const auto& a, const auto& b) {
      if constexpr (std::is_same_v<std::decay_t<decltype(a)>, ByteEdge>)
        return std::tie(a.lo, a.hi, a.target) < std::tie(b.lo, b.hi, b.target);
      else
        return std::tie(a.rule, a.target) < std::tie(b.rule, b.target);
    };
    std::sort(st.bytes.begin(), st.bytes.end(), by_fields);
    st.bytes.erase(std::unique(st.bytes.begin(), st.bytes.end(),
                               [](const ByteEdge& a, const ByteEdge& b) {
                                 return a.lo == b.lo && a.hi == b.hi && a.target == b.target;
                               }),
                   st.bytes.end());
    std::sort(st.calls.begin(), st.calls.end(), by_fields);
    st.calls.erase(std::unique(st.calls.begin(), st.calls.end(),
                               [](const CallEdge& a, const CallEdge& b) {
                                 return a.rule == b.rule && a.target == b.target;
                               }),
                   st.calls.end());
    states.push_back(std::move(st));
  }
  return states;
}

// Which rules can finish at all (some string takes state 0 to a final state),
// and within each rule which states can still reach a final state.
void trim(Grammar& g) {
  std::vector<bool> productive(g.rules.size(), false);
  std::vector<std::vector<bool>> live(g.rules.size());
  for (size_t r = 0; r < g.rules.size(); ++r) live[r].assign(g.rules[r].states.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < g.rules.size(); ++r) {
      auto& states = g.rules[r].states;
      for (bool inner = true; inner;) {
        inner = false;
        for (size_t s = 0; s < states.size(); ++s) {
          if (live[r][s]) continue;
          bool ok = states[s].final;
          for (const auto& e : states[s].bytes) ok = ok || live[r][size_t(e.target)];
          for (const auto& c : states[s].calls) ok = ok || (productive[size_t(c.rule)] && live[r][size_t(c.target)]);
          if (ok) live[r][s] = inner = changed = true;
        }
      }
      if (!productive[r] && !states.empty() && live[r][0]) productive[r] = changed = true;
    }
  }
  if (!productive[size_t(g.root)]) throw GrammarEmpty("the grammar matches no string at all");
  for (size_t r = 0; r < g.rules.size(); ++r)
    for (size_t s = 0; s < g.rules[r].states.size(); ++s) {
      State& st = g.rules[r].states[s];
      std::erase_if(st.bytes, [&](const ByteEdge& e) { return !live[r][size_t(e.target)]; });
      std::erase_if(st.calls, [&](const CallEdge& c) {
        return !productive[size_t(c.rule)] || !live[r][size_t(c.target)];
      });
    }
}

// Refuses a rule that can reach a call of itself without reading a byte.
void check_left_recursion(const Grammar& g) {
  const size_t n = g.rules.size();
  // Nullable rules: state 0 reaches a final state through calls of nullable rules only.
  std::vector<bool> nullable(n, false);
  auto epsilon_reach = [&](size_t r) {
    std::vector<bool> seen(g.rules[r].states.size(), false);
    std::vector<int> stack{0}, reached;
    seen[0] = true;
    while (!stack.empty()) {
      const int s = stack.back();
      stack.pop_back();
      reached.push_back(s);
      for (const auto& c : g.rules[r].states[size_t(s)].calls)
        if (nullable[size_t(c.rule)] && !seen[size_t(c.target)]) {
          seen[size_t(c.target)] = true;
          stack.push_back(c.target);
        }
    }
    return reached;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (const int s : epsilon_reach(r))
        if (g.rules[r].states[size_t(s)].final) {
          nullable[r] = changed = true;
          break;
        }
    }
  }
  std::vector<std::vector<int>> left_calls(n);
  for (size_t r = 0; r < n; ++r)
    for (const int s : epsilon_reach(r))
      for (const auto& c : g.rules[r].states[size_t(s)].calls) left_calls[r].push_back(c.rule);
  std::vector<int> color(n, 0);  // 0 unvisited, 1 on the path, 2 done
  std::function<void(int)> dfs = [&](int r) {
    color[size_t(r)] = 1;
    for (const int c : left_calls[size_t(r)]) {
      if (color[size_t(c)] == 1)
        throw GrammarLeftRecursion(g.rules[size_t(c)].name,
                                   "'" + g.rules[size_t(c)].name + "' can refer to itself without any text between");
      if (color[size_t(c)] == 0) dfs(c);
    }
    color[size_t(r)] = 2;
  };
  for (size_t r = 0; r < n; ++r)
    if (color[r] == 0) dfs(int(r));
}

}  // namespace

int GrammarBuilder::declare(std::string name) {
  g_.rules.push_back(Rule{std::move(name), {}});
  defined_.push_back(false);
  return int(g_.rules.size()) - 1;
}

void GrammarBuilder::define(int rule, const Expr& body) {
  EpsilonNfa nfa{{}, states_, max_states_};
  nfa.add();
  const int end = nfa.build(body, 0);
  g_.rules.at(size_t(rule)).states = remove_epsilons(nfa, end);
  defined_.at(size_t(rule)) = true;
}

void GrammarBuilder::define_automaton(int rule, std::vector<State> states) {
  states_ += states.size();
  if (states_ > max_states_) throw GrammarTooLarge("the grammar exceeds " + std::to_string(max_states_) + " automaton states");
  g_.rules.at(size_t(rule)).states = std::move(states);
  defined_.at(size_t(rule)) = true;
}

Grammar GrammarBuilder::finish(int root) {
  for (size_t r = 0; r < g_.rules.size(); ++r)
    if (!defined_[r]) define(int(r), alt({}));
  g_.root = root;
  trim(g_);
  check_left_recursion(g_);
  return std::move(g_);
}

}  // namespace astrai::grammar
