// Tokenizer::encode: SentencePiece BPE exactly as llama2.c's run.c encodes.
//
//  1. BOS when asked; for non-empty text the piece " " (the dummy prefix).
//  2. Split the text into UTF-8 code points the way run.c does: a byte plus up
//     to three following continuation bytes (10xxxxxx). A code point that is a
//     piece becomes that id; otherwise each of its bytes becomes <0xXX>.
//  3. Repeatedly merge the adjacent pair whose concatenated pieces form the
//     highest-scoring piece, the leftmost such pair on a tie, until none does.
//
// run.c rescans every pair after each merge: O(n^2) lookups for n symbols.
// Here the symbols form a linked list and the candidate pairs a max-heap
// ordered by (score, then leftmost), so encoding costs O(n log n): each merge
// pushes at most two new pairs. Pairs made stale by a merge stay in the heap
// and are skipped when popped (each symbol carries a version counter).
//
// Two deliberate differences from run.c, neither visible with llama2.c's
// vocabularies: BOS takes no part in merges (run.c would merge it if "<s>"
// followed by some piece were itself a piece; a test checks that none is), and
// a NUL byte is encoded as <0x00> rather than ending the text.
#include <queue>

#include "engine/tokenizer/tokenizer.h"

namespace astrai {

namespace {

// run.c starts its search for the best pair at this score and only a strictly
// greater score wins, so pieces scored at or below it never merge.
constexpr float kNoMergeScore = -1e10f;

struct Symbol {
  int id;             // current piece id
  int prev, next;     // neighbours in the list; -1 at either end
  uint32_t version;   // bumped whenever id changes; 0 marks a symbol merged away
};

struct Candidate {
  float score;  // score of the merged piece
  int merged_id;
  int left, right;  // symbol indices; text order equals index order
  uint32_t left_version, right_version;

  // std::priority_queue pops the greatest: higher score, then smaller (more
  // leftward) index, which is run.c's "strictly greater replaces the best".
  bool operator<(const Candidate& other) const {
    if (score != other.score) return score < other.score;
    return left > other.left;
  }
};

}  // namespace

std::vector<int> Tokenizer::encode(std::string_view text, bool add_bos) const {
  std::vector<int> ids;
  if (add_bos) ids.push_back(bos_id_);
  if (text.empty()) return ids;

  // Steps 1 and 2: the initial symbols.
  std::vector<int> initial;
  initial.reserve(text.size() + 1);
  auto push_bytes = [&](std::string_view bytes) {
    for (const char byte : bytes) initial.push_back(byte_ids_[uint8_t(byte)]);
  };
  auto push_piece_or_bytes = [&](std::string_view chunk) {
    const int id = piece_id(chunk);
    if (id >= 0)
      initial.push_back(id);
    else
      push_bytes(chunk);
  };
  push_piece_or_bytes(" ");
  for (size_t start = 0; start < text.size();) {
    size_t end = start + 1;
    while (end < text.size() && end - start < 4 && (uint8_t(text[end]) & 0xC0) == 0x80) ++end;
    push_piece_or_bytes(text.substr(start, end - start));
    start = end;
  }

  // Step 3: merges, highest score first.
  std::vector<Symbol> symbols(initial.size());
  for (size_t i = 0; i < initial.size(); ++i)
    symbols[i] = Symbol{initial[i], int(i) - 1, i + 1 < initial.size() ? int(i) + 1 : -1, 1};

  std::priority_queue<Candidate> queue;
  std::string joined;  // reused buffer for the concatenated pieces
  auto consider_pair = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    joined.assign(pieces_[size_t(symbols[size_t(left)].id)]);
    joined += pieces_[size_t(symbols[size_t(right)].id)];
    const int merged = piece_id(joined);
    if (merged < 0 || !(scores_[size_t(merged)] > kNoMergeScore)) return;
    queue.push(Candidate{scores_[size_t(merged)], merged, left, right, symbols[size_t(left)].version,
                         symbols[size_t(right)].version});
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
    left.id = best.merged_id;
    ++left.version;
    left.next = right.next;
    if (right.next >= 0) symbols[size_t(right.next)].prev = best.left;
    right.version = 0;
    consider_pair(left.prev, best.left);
    consider_pair(best.left, left.next);
  }

  for (int i = 0; i >= 0; i = symbols[size_t(i)].next) ids.push_back(symbols[size_t(i)].id);
  return ids;
}

}  // namespace astrai
