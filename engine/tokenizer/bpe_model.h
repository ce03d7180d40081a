// The `BPE` model of tokenizer.json: a vocabulary of byte-level pieces and a
// ranked list of merges. A word (one pre-tokenized piece, already spelled in
// the byte-level alphabet) starts as one symbol per code point; the adjacent
// pair whose merge has the lowest rank is merged, the leftmost on a tie, until
// no pair has a merge. With ignore_merges (Llama 3), a word that is itself in
// the vocabulary is that one token.
//
// SentencePiece-style vocabularies (Llama 2, Mistral 7B) spell words with '▁'
// for spaces and have no piece for most code points; a code point that is not
// a piece becomes the <0xXX> pieces of its bytes (byte_fallback), or the
// unknown token when those are missing (fuse_unk: one for a run of them).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace astrai {

// What a code point outside the vocabulary becomes (tokenizer.json's
// byte_fallback, unk_token, fuse_unk).
struct BpeFallback {
  bool byte_fallback = false;  // its bytes' <0xXX> pieces, when all of them exist
  int unk_id = -1;             // else this id; -1: none (encoding such a word throws)
  bool fuse_unk = false;       // adjacent unknown code points give one unk_id
};

class BpeModel {
 public:
  // vocab: piece -> id. merges: pairs of pieces in rank order. Throws
  // std::invalid_argument for a merge whose parts or result are not pieces.
  BpeModel(std::unordered_map<std::string, int> vocab, const std::vector<std::pair<std::string, std::string>>& merges,
           bool ignore_merges, BpeFallback fallback = {});

  // Appends the ids of `word` to `out`. Throws std::invalid_argument when a
  // code point of the word is not a piece and the fallback gives nothing for
  // it (byte-level vocabularies have all 256 bytes as pieces).
  void encode_word(std::string_view word, std::vector<int>& out) const;

  // -1 when absent.
  int id(std::string_view piece) const;
  const auto& vocab() const { return vocab_; }
  size_t merge_count() const { return merges_.size(); }
  // The merges as given (rank order, repeats included), for writing them out.
  const std::vector<std::pair<std::string, std::string>>& merge_list() const { return merge_list_; }
  bool ignore_merges() const { return ignore_merges_; }
  const BpeFallback& fallback() const { return fallback_; }

 private:
  // The initial symbols of `word`: one per code point, or its fallback.
  std::vector<int> initial_symbols(std::string_view word) const;

  struct Merge {
    int rank;
    int merged_id;
  };
  static uint64_t pair_key(int a, int b) { return uint64_t(uint32_t(a)) << 32 | uint32_t(b); }

  // Heterogeneous lookup: find() takes a string_view without building a string.
  struct PieceHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, int, PieceHash, std::equal_to<>> vocab_;
  std::unordered_map<uint64_t, Merge> merges_;
  std::vector<std::pair<std::string, std::string>> merge_list_;
  bool ignore_merges_;
  BpeFallback fallback_;
  std::array<int, 256> byte_ids_{};  // the <0xXX> piece of each byte, -1 when absent
};

}  // namespace astrai
