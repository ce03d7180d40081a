#include "engine/grammar/reasoning_grammar.h"

#include <string_view>

#include "engine/grammar/json_schema.h"
#include "engine/grammar/text_automata.h"

namespace astrai::grammar {

// The finished grammar gains two rules: the thinking (an automaton up to the
// close marker) and a new root that reads [open] thinking, whitespace, then
// calls the old root. Neither can make the old rules unproductive or left
// recursive, so the checks of GrammarBuilder::finish still hold.
Grammar after_reasoning(Grammar answer, const ReasoningMarkers& markers, bool optional) {
  if (markers.open.empty() || markers.close.empty())
    throw ConstraintError("", "", "a grammar after reasoning needs the model's reasoning markers");
  const int old_root = answer.root;
  const int thinking = int(answer.rules.size());
  answer.rules.push_back(Rule{"reasoning (up to " + markers.close + ")", text_through_marker(markers.close)});

  Rule top{optional ? "optional reasoning, then the answer" : "reasoning, then the answer", {}};
  auto add_state = [&top] {
    top.states.emplace_back();
    return int32_t(top.states.size()) - 1;
  };
  const int32_t first = add_state();
  int32_t at = first;
  if (optional)
    for (const char c : markers.open) {  // the open marker byte by byte
      const int32_t next = add_state();
      top.states[size_t(at)].bytes.push_back({uint8_t(c), uint8_t(c), next});
      at = next;
    }
  const int32_t gap = add_state(), done = add_state();
  top.states[size_t(at)].calls.push_back({thinking, gap});
  // From `from`: the answer's opener byte by byte, then the answer.
  auto answer_from = [&](int32_t from) {
    for (const char c : markers.answer_open) {
      const int32_t next = add_state();
      top.states[size_t(from)].bytes.push_back({uint8_t(c), uint8_t(c), next});
      from = next;
    }
    top.states[size_t(from)].calls.push_back({old_root, done});
  };
  // Whitespace between the close and the answer: at most kMaxWhitespace
  // bytes, as between JSON tokens (a chain of states, each of which may
  // start the answer). Unbounded, a random model on a vocabulary of hundreds
  // of whitespace tokens (Qwen 3's) drew them for ever and never answered.
  answer_from(gap);
  if (markers.answer_open.empty()) {
    int32_t from = gap;
    for (int n = 0; n < kMaxWhitespace; ++n) {
      const int32_t next = add_state();
      for (const ByteRange r : kJsonWhitespace) top.states[size_t(from)].bytes.push_back({r.lo, r.hi, next});
      answer_from(next);
      from = next;
    }
  }
  if (optional) answer_from(first);
  top.states[size_t(done)].final = true;

  answer.root = int(answer.rules.size());
  answer.rules.push_back(std::move(top));
  return answer;
}

}  // namespace astrai::grammar
