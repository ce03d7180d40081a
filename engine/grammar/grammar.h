// A grammar over bytes: named rules, each a small automaton (an NFA without
// epsilon moves) whose edges read one byte from a range or call another rule.
// This is the pushdown automaton of xgrammar's design: a call pushes the
// return position, a final state pops it. The JSON Schema and regex compilers
// build Expr trees; GrammarBuilder turns them into rules (Thompson's
// construction, then epsilon removal), trims states that can never finish,
// and refuses left recursion (a rule that can call itself without reading a
// byte would grow the stack forever).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace astrai::grammar {

struct ByteRange {
  uint8_t lo, hi;  // inclusive
};

// JSON's whitespace (RFC 8259: tab, line feed, carriage return, space): what
// may separate JSON values, tool calls, and a closed thinking from its answer.
inline const std::vector<ByteRange> kJsonWhitespace{{'\t', '\n'}, {'\r', '\r'}, {' ', ' '}};

// An expression over bytes and rule calls.
struct Expr {
  enum class Kind { Bytes, Seq, Alt, Repeat, Call };
  static constexpr int kUnbounded = -1;
  Kind kind = Kind::Seq;
  std::vector<ByteRange> ranges;  // Bytes: one byte from any of these
  std::vector<Expr> items;        // Seq, Alt; Repeat: items[0]
  int min = 0, max = 0;           // Repeat: max may be kUnbounded
  int rule = -1;                  // Call
};

Expr bytes(std::vector<ByteRange> ranges);
Expr byte_char(uint8_t b);
Expr literal(const std::string& text);
Expr seq(std::vector<Expr> items);
Expr alt(std::vector<Expr> items);  // alt({}) matches nothing
Expr repeat(Expr e, int min, int max);
inline Expr optional(Expr e) { return repeat(std::move(e), 0, 1); }
inline Expr star(Expr e) { return repeat(std::move(e), 0, Expr::kUnbounded); }
inline Expr empty_expr() { return seq({}); }
Expr call(int rule);

struct ByteEdge {
  uint8_t lo, hi;
  int32_t target;
};
struct CallEdge {
  int32_t rule;    // the callee, entered at its state 0
  int32_t target;  // where this rule resumes when the callee finishes
};
struct State {
  std::vector<ByteEdge> bytes;
  std::vector<CallEdge> calls;
  bool final = false;
};
struct Rule {
  std::string name;           // for errors and dumps: the schema pointer it came from
  std::vector<State> states;  // starts at state 0
};

struct Grammar {
  std::vector<Rule> rules;
  int root = 0;
  size_t state_count() const;
  std::string dump() const;  // readable rules, for debugging and test failures
};

// The grammar exceeds the state bound (a schema too large to compile).
struct GrammarTooLarge : std::length_error {
  using std::length_error::length_error;
};
// A rule calls itself without reading a byte (left recursion): rule names it.
struct GrammarLeftRecursion : std::invalid_argument {
  GrammarLeftRecursion(std::string rule, const std::string& message)
      : std::invalid_argument(message), rule(std::move(rule)) {}
  std::string rule;
};
// The root matches no string at all (e.g. minItems above maxItems).
struct GrammarEmpty : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

class GrammarBuilder {
 public:
  explicit GrammarBuilder(size_t max_states) : max_states_(max_states) {}
  // A rule whose body comes later (define), so that bodies may call it (recursion).
  int declare(std::string name);
  void define(int rule, const Expr& body);
  int add(std::string name, const Expr& body) {
    const int r = declare(std::move(name));
    define(r, body);
    return r;
  }
  // A rule given directly as its automaton (state 0 first; targets index
  // `states`), for languages an Expr spells badly: text_automata.h.
  void define_automaton(int rule, std::vector<State> states);
  bool defined(int rule) const { return defined_.at(size_t(rule)); }
  // Trims, checks, and hands over the grammar rooted at `root`.
  Grammar finish(int root);

 private:
  size_t max_states_;
  size_t states_ = 0;
  Grammar g_;
  std::vector<bool> defined_;
};

}  // namespace astrai::grammar
