// BpeModel: merge table and the per-word merge loop.
#include "engine/tokenizer/bpe_model.h"

#include <stdexcept>

#include "engine/tokenizer/byte_piece.h"
#include "engine/tokenizer/pair_merge.h"

namespace astrai {

BpeModel::BpeModel(std::unordered_map<std::string, int> vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges, bool ignore_merges,
                   BpeFallback fallback)
    : vocab_(vocab.begin(), vocab.end()), merge_list_(merges), ignore_merges_(ignore_merges), fallback_(fallback) {
  for (int b = 0; b < 256; ++b) byte_ids_[size_t(b)] = id(byte_piece_name(uint8_t(b)));
  merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    const int ia = id(a), ib = id(b), im = id(a + b);
    if (ia < 0 || ib < 0 || im < 0)
      throw std::invalid_argument("BPE merge " + std::to_string(rank) + " '" + a + " " + b +
                                  "': a part or the merged piece is not in the vocabulary");
    merges_.try_emplace(pair_key(ia, ib), Merge{int(rank), im});  // a repeated merge keeps its first rank
  }
}

int BpeModel::id(std::string_view piece) const {
  const auto it = vocab_.find(piece);
  return it == vocab_.end() ? -1 : it->second;
}

void BpeModel::encode_word(std::string_view word, std::vector<int>& out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    if (const int whole = id(word); whole >= 0) {
      out.push_back(whole);
      return;
    }
  }
  // The lowest rank merges first, leftmost on a tie: tokenizers' heap of (rank, position).
  merge_pairs(
      initial_symbols(word),
      [this](int left, int right) -> std::optional<PairMerge> {
        const auto it = merges_.find(pair_key(left, right));
        if (it == merges_.end()) return std::nullopt;
        return PairMerge{-double(it->second.rank), it->second.merged_id};
      },
      out);
}

std::vector<int> BpeModel::initial_symbols(std::string_view word) const {
  std::vector<int> symbols;
  bool after_unk = false;  // the previous code point became unk_id
  for (size_t i = 0; i < word.size();) {
    size_t n = 1;
    while (i + n < word.size() && (uint8_t(word[i + n]) & 0xC0) == 0x80) ++n;
    const std::string_view code_point = word.substr(i, n);
    i += n;
    if (const int s = id(code_point); s >= 0) {
      symbols.push_back(s);
      after_unk = false;
      continue;
    }
    bool bytes_known = fallback_.byte_fallback;
    for (const char byte : code_point) bytes_known = bytes_known && byte_ids_[uint8_t(byte)] >= 0;
    if (bytes_known) {
      for (const char byte : code_point) symbols.push_back(byte_ids_[uint8_t(byte)]);
      after_unk = false;
      continue;
    }
    if (fallback_.unk_id < 0)
      throw std::invalid_argument("BPE: '" + std::string(code_point) + "' is not in the vocabulary");
    if (!(fallback_.fuse_unk && after_unk)) symbols.push_back(fallback_.unk_id);
    after_unk = true;
  }
  return symbols;
}

}  // namespace astrai
