// Tokenizer::encode: SentencePiece BPE exactly as llama2.c's run.c encodes.
//
//  1. BOS when asked; for non-empty text the piece " " (the dummy prefix),
//     unless the vocabulary has none (Gemma: add_space_prefix false).
//  2. Split the text into UTF-8 code points the way run.c does: a byte plus up
//     to three following continuation bytes (10xxxxxx). A code point that is a
//     piece becomes that id; otherwise each of its bytes becomes <0xXX>.
//  3. Repeatedly merge the adjacent pair whose concatenated pieces form the
//     highest-scoring piece, the leftmost such pair on a tie, until none does.
//
// Step 3 is merge_pairs (pair_merge.h), in O(n log n) rather than run.c's O(n^2).
//
// Two deliberate differences from run.c, neither visible with llama2.c's
// vocabularies: BOS takes no part in merges (run.c would merge it if "<s>"
// followed by some piece were itself a piece; a test checks that none is), and
// a NUL byte is encoded as <0x00> rather than ending the text.
#include "engine/tokenizer/hf_tokenizer.h"
#include "engine/tokenizer/pair_merge.h"
#include "engine/tokenizer/tokenizer.h"

namespace astrai {

namespace {

// run.c starts its search for the best pair at this score and only a strictly
// greater score wins, so pieces scored at or below it never merge.
constexpr float kNoMergeScore = -1e10f;

}  // namespace

std::vector<int> Tokenizer::encode(std::string_view text, bool add_bos) const {
  if (bpe_) return bpe_->encode(text, add_bos);
  if (hf_sentencepiece_) return hf_sentencepiece_->encode(text, add_bos);
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
  if (add_space_prefix_) push_piece_or_bytes(" ");
  for (size_t start = 0; start < text.size();) {
    size_t end = start + 1;
    while (end < text.size() && end - start < 4 && (uint8_t(text[end]) & 0xC0) == 0x80) ++end;
    push_piece_or_bytes(text.substr(start, end - start));
    start = end;
  }

  // Step 3: merges, highest score first (leftmost on a tie, as run.c's
  // "strictly greater replaces the best" scan picks).
  std::string joined;  // reused buffer for the concatenated pieces
  auto find_merge = [&](int left, int right) -> std::optional<PairMerge> {
    joined.assign(pieces_[size_t(left)]);
    joined += pieces_[size_t(right)];
    const int merged = piece_id(joined);
    if (merged < 0 || !(scores_[size_t(merged)] > kNoMergeScore)) return std::nullopt;
    return PairMerge{scores_[size_t(merged)], merged};
  };
  merge_pairs(initial, find_merge, ids);
  return ids;
}

std::vector<int> Tokenizer::encode_with_special_tokens(std::string_view text) const {
  // tokenizer.json matches its added tokens itself
  if (bpe_) return bpe_->encode(text, false);
  if (hf_sentencepiece_) return hf_sentencepiece_->encode(text, false);
  // The longest control, user-defined or unknown piece at each place (the matcher
  // tokenizer.json's added tokens use), the runs between encoded as text.
  std::vector<int> ids;
  special_matcher_.split(
      text,
      [&](std::string_view run, size_t) {
        const std::vector<int> run_ids = encode(run, false);
        ids.insert(ids.end(), run_ids.begin(), run_ids.end());
      },
      [&](int id) { ids.push_back(id); });
  return ids;
}

}  // namespace astrai
