// BpeModel: merge table and the per-word merge loop.
#include "engine/tokenizer/bpe_model.h"

#include <stdexcept>

#include "engine/tokenizer/pair_merge.h"

namespace astrai {

BpeModel::BpeModel(std::unordered_map<std::string, int> vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges, bool ignore_merges)
    : vocab_(vocab.begin(), vocab.end()), merge_list_(merges), ignore_merges_(ignore_merges) {
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
  // One symbol per UTF-8 code point.
  std::vector<int> symbols;
  for (size_t i = 0; i < word.size();) {
    size_t n = 1;
    while (i + n < word.size() && (uint8_t(word[i + n]) & 0xC0) == 0x80) ++n;
    const int s = id(word.substr(i, n));
    if (s < 0) throw std::invalid_argument("BPE: '" + std::string(word.substr(i, n)) + "' is not in the vocabulary");
    symbols.push_back(s);
    i += n;
  }
  // The lowest rank merges first, leftmost on a tie: tokenizers' heap of (rank, position).
  merge_pairs(
      symbols,
      [this](int left, int right) -> std::optional<PairMerge> {
        const auto it = merges_.find(pair_key(left, right));
        if (it == merges_.end()) return std::nullopt;
        return PairMerge{-double(it->second.rank), it->second.merged_id};
      },
      out);
}

}  // namespace astrai
