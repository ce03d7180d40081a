// The matcher's state: a set of pushdown stacks over a Grammar, kept as their
// tops. A top is (rule, state, parent), where parent names an interned frame
// (rule, state to resume at, its own parent) in a StackArena, so stacks share
// their common bottoms (xgrammar's persistent stack) and equal stacks are
// equal numbers. advance() reads one byte into every stack; close() expands
// calls and returns so that every kept top either reads a byte next or is a
// complete match.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "engine/grammar/grammar.h"

namespace astrai::grammar {

inline constexpr int32_t kBottom = -1;  // the empty stack below the root rule
inline constexpr int32_t kOutside = -2;  // the unknown context of the token cache (see token_mask_cache.h)

struct StackTop {
  int32_t rule, state, parent;
  friend bool operator==(const StackTop&, const StackTop&) = default;
  friend auto operator<=>(const StackTop&, const StackTop&) = default;
};

class StackArena {
 public:
  int32_t intern(const StackTop& frame);
  const StackTop& at(int32_t id) const { return frames_[size_t(id)]; }
  size_t size() const { return frames_.size(); }

 private:
  struct Hash {
    size_t operator()(const StackTop& t) const {
      return (size_t(uint32_t(t.rule)) * 0x9E3779B97F4A7C15ull) ^ (size_t(uint32_t(t.state)) * 0xC2B2AE3D27D4EB4Full) ^
             size_t(uint32_t(t.parent));
    }
  };
  std::vector<StackTop> frames_;
  std::unordered_map<StackTop, int32_t, Hash> ids_;
};

// Reads and expands stack sets; scratch space reused between calls.
class StackStepper {
 public:
  StackStepper(const Grammar& g, StackArena& arena) : g_(&g), arena_(&arena) {}
  // The closure of `seeds` into `out` (sorted, unique). Sets `exited` when a
  // stack returns into kOutside.
  void close(const std::vector<StackTop>& seeds, std::vector<StackTop>& out, bool& exited);
  // Reads `byte` into every stack of `in` and closes the result into `out`.
  void advance(const std::vector<StackTop>& in, uint8_t byte, std::vector<StackTop>& out, bool& exited);
  // Some stack of the (closed) set is a complete match of the root rule.
  bool can_end(const std::vector<StackTop>& set) const;
  // Some stack of the (closed) set can read another byte.
  bool can_continue(const std::vector<StackTop>& set) const;
  const Grammar& grammar() const { return *g_; }

 private:
  const Grammar* g_;
  StackArena* arena_;
  std::vector<StackTop> work_, seen_, seeds_;
};

}  // namespace astrai::grammar
