// Greedy pair merging, the loop at the heart of both BPE encoders here:
// SentencePiece's (tokenizer_encode.cpp: the pair whose merged piece has the
// highest score) and tokenizer.json's (bpe_model.cpp: the pair whose merge has
// the lowest rank). Given the initial symbols of a word, repeatedly merge the
// adjacent pair of highest priority, the leftmost one on a tie, until no
// adjacent pair can merge.
//
// Rescanning every pair after each merge (run.c) costs O(n^2) for n symbols,
// which a long word (a megabyte of letters in one prompt) turns into minutes.
// Here the symbols form a linked list and the candidate pairs a max-heap
// ordered by (priority, then leftmost), so a word costs O(n log n): each merge
// pushes at most two new pairs. Pairs made stale by a merge stay in the heap
// and are skipped when popped (each symbol carries a version counter). This is
// also how Hugging Face's tokenizers (word.rs, merge_all) and llama.cpp merge.
#pragma once

#include <cstdint>
#include <optional>
#include <queue>
#include <span>
#include <vector>

namespace astrai {

struct PairMerge {
  double priority;  // higher merges first
  int merged_id;
};

// find_merge(left_id, right_id) -> std::optional<PairMerge>. Appends the
// merged symbols to `out`.
template <class FindMerge>
void merge_pairs(std::span<const int> initial, FindMerge&& find_merge, std::vector<int>& out) {
  struct Symbol {
    int id;
    int prev, next;     // neighbours in the list; -1 at either end
    uint32_t version;   // bumped whenever id changes; 0 marks a symbol merged away
  };
  struct Candidate {
    PairMerge merge;
    int left, right;  // symbol indices; text order equals index order
    uint32_t left_version, right_version;
    // std::priority_queue pops the greatest: higher priority, then the smaller
    // (more leftward) index.
    bool operator<(const Candidate& other) const {
      if (merge.priority != other.merge.priority) return merge.priority < other.merge.priority;
      return left > other.left;
    }
  };

  std::vector<Symbol> symbols(initial.size());
  for (size_t i = 0; i < initial.size(); ++i)
    symbols[i] = Symbol{initial[i], int(i) - 1, i + 1 < initial.size() ? int(i) + 1 : -1, 1};

  std::priority_queue<Candidate> queue;
  auto consider_pair = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const std::optional<PairMerge> merge = find_merge(symbols[size_t(left)].id, symbols[size_t(right)].id);
    if (merge)
      queue.push(Candidate{*merge, left, right, symbols[size_t(left)].version, symbols[size_t(right)].version});
  };
  for (size_t i = 0; i + 1 < symbols.size(); ++i) consider_pair(int(i), int(i) + 1);

  while (!queue.empty()) {
    const Candidate best = queue.top();
    queue.pop();
    Symbol& left = symbols[size_t(best.left)];
    Symbol& right = symbols[size_t(best.right)];
    // Stale: either side was merged away or changed, or they are no longer adjacent.
    if (left.version != best.left_version || right.version != best.right_version || left.next != best.right)
      continue;
    left.id = best.merge.merged_id;
    ++left.version;
    left.next = right.next;
    if (right.next >= 0) symbols[size_t(right.next)].prev = best.left;
    right.version = 0;
    consider_pair(left.prev, best.left);
    consider_pair(best.left, left.next);
  }

  if (symbols.empty()) return;
  for (int i = 0; i >= 0; i = symbols[size_t(i)].next) out.push_back(symbols[size_t(i)].id);
}

}  // namespace astrai
