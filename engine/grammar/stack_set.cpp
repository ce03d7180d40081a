#include "engine/grammar/stack_set.h"

#include <algorithm>

namespace astrai::grammar {

int32_t StackArena::intern(const StackTop& frame) {
  const auto [it, inserted] = ids_.try_emplace(frame, int32_t(frames_.size()));
  if (inserted) frames_.push_back(frame);
  return it->second;
}

void StackStepper::close(const std::vector<StackTop>& seeds, std::vector<StackTop>& out, bool& exited) {
  out.clear();
  seen_.clear();
  work_.assign(seeds.begin(), seeds.end());
  while (!work_.empty()) {
    const StackTop t = work_.back();
    work_.pop_back();
    // Sets stay small (a few tops per alternative in play): a linear scan beats hashing.
    if (std::find(seen_.begin(), seen_.end(), t) != seen_.end()) continue;
    seen_.push_back(t);
    const State& st = g_->rules[size_t(t.rule)].states[size_t(t.state)];
    if (!st.bytes.empty() || (st.final && t.parent == kBottom)) out.push_back(t);
    for (const CallEdge& c : st.calls)
      work_.push_back({c.rule, 0, arena_->intern({t.rule, c.target, t.parent})});
    if (st.final) {
      if (t.parent >= 0)
        work_.push_back(arena_->at(t.parent));
      else if (t.parent == kOutside)
        exited = true;
    }
  }
  std::sort(out.begin(), out.end());
}

void StackStepper::advance(const std::vector<StackTop>& in, uint8_t byte, std::vector<StackTop>& out, bool& exited) {
  seeds_.clear();
  for (const StackTop& t : in)
    for (const ByteEdge& e : g_->rules[size_t(t.rule)].states[size_t(t.state)].bytes)
      if (e.lo <= byte && byte <= e.hi) seeds_.push_back({t.rule, e.target, t.parent});
  if (seeds_.empty()) {
    out.clear();
    return;
  }
  close(seeds_, out, exited);
}

bool StackStepper::can_end(const std::vector<StackTop>& set) const {
  for (const StackTop& t : set)
    if (t.parent == kBottom && g_->rules[size_t(t.rule)].states[size_t(t.state)].final) return true;
  return false;
}

bool StackStepper::can_continue(const std::vector<StackTop>& set) const {
  for (const StackTop& t : set)
    if (!g_->rules[size_t(t.rule)].states[size_t(t.state)].bytes.empty()) return true;
  return false;
}

}  // namespace astrai::grammar
