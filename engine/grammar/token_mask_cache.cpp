#include "engine/grammar/token_mask_cache.h"

#include <algorithm>

#include "engine/grammar/stack_set.h"
#include "engine/grammar/token_constraint.h"

namespace astrai::grammar {

const PositionTokens& TokenMaskCache::at(int32_t rule, int32_t state) const {
  const uint64_t key = (uint64_t(uint32_t(rule)) << 32) | uint32_t(state);
  std::lock_guard lock(mutex_);
  auto& slot = entries_[key];
  if (!slot) slot = compute(rule, state);
  return *slot;
}

std::unique_ptr<PositionTokens> TokenMaskCache::compute(int32_t rule, int32_t state) const {
  auto out = std::make_unique<PositionTokens>();
  const auto& body = vocab_.body();
  out->accepted.assign(bitmask_words(vocab_.size()), 0);
  StackArena arena;
  StackStepper stepper(*grammar_, arena);

  // levels[d]: the stacks after the first d bytes of the current trie path.
  std::vector<std::vector<StackTop>> levels(1);
  bool ignored = false;
  stepper.close({{rule, state, kOutside}}, levels[0], ignored);
  std::vector<bool> exited_before(1, false);  // some path left the rule strictly inside the prefix
  struct Frame {
    int32_t node, depth;
  };
  // Preorder walk: node k's children follow it, each child's subtree ends at its subtree_end.
  std::vector<Frame> stack;
  const auto& trie = body.trie;
  for (int32_t c = 1; c < int32_t(trie.size()); c = trie[size_t(c)].subtree_end) stack.push_back({c, 1});
  std::reverse(stack.begin(), stack.end());
  auto mark_tokens = [&](const TokenVocabulary::TrieNode& n, bool accepted) {
    for (int32_t k = n.first_token; k < n.first_token + n.token_count; ++k) {
      if (accepted) {
        const int32_t id = body.sorted_ids[size_t(k)];
        out->accepted[size_t(id) / 32] |= 1u << (id % 32);
      } else {
        out->uncertain_ranks.push_back(k);
      }
    }
  };
  while (!stack.empty()) {
    const Frame f = stack.back();
    stack.pop_back();
    const auto& node = trie[size_t(f.node)];
    if (levels.size() <= size_t(f.depth)) {
      levels.resize(size_t(f.depth) + 1);
      exited_before.resize(size_t(f.depth) + 1);
    }
    bool exited = false;
    stepper.advance(levels[size_t(f.depth) - 1], node.byte, levels[size_t(f.depth)], exited);
    const bool alive = !levels[size_t(f.depth)].empty();
    const bool left_before = exited_before[size_t(f.depth) - 1];
    if (alive || exited)
      mark_tokens(node, true);
    else if (left_before)
      mark_tokens(node, false);
    exited_before[size_t(f.depth)] = left_before || exited;
    if (!alive && !left_before && !exited) continue;  // the whole subtree is rejected
    if (!alive) {
      // Nothing stays inside the rule: every longer token here is uncertain.
      for (int32_t d = f.node + 1; d < node.subtree_end; ++d) mark_tokens(trie[size_t(d)], false);
      continue;
    }
    const size_t first = stack.size();
    for (int32_t c = f.node + 1; c < node.subtree_end; c = trie[size_t(c)].subtree_end)
      stack.push_back({c, f.depth + 1});
    std::reverse(stack.begin() + std::ptrdiff_t(first), stack.end());
  }
  std::sort(out->uncertain_ranks.begin(), out->uncertain_ranks.end());
  return out;
}

}  // namespace astrai::grammar
