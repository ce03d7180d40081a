// A model's vocabulary as the grammar matcher sees it: the bytes each token id
// emits and the end-of-sequence ids, with a byte trie over the tokens in
// lexicographic order (walked once per mask; see token_mask_cache.h).
// Copies share one immutable body.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace astrai {
class Tokenizer;
}

namespace astrai::grammar {

class TokenVocabulary {
 public:
  // token_bytes[id]: what the detokenizer emits for id; "" for ids that never
  // appear in constrained text (control, padding, unknown). end_ids: ids that
  // end the sequence (allowed exactly when the grammar is complete).
  TokenVocabulary(std::vector<std::string> token_bytes, std::vector<int> end_ids);
  // From a tokenizer: byte-level BPE pieces are their bytes; SentencePiece
  // pieces are held with real spaces already ('▁' converted on load) and
  // <0xNN> pieces are one byte; control, unknown and unused ids emit nothing;
  // end ids are end_of_generation_ids(). Defined in tokenizer_vocabulary.cpp
  // (libastrai), so that the grammar library does not link the tokenizer.
  static TokenVocabulary from_tokenizer(const Tokenizer& tokenizer);

  struct TrieNode {
    uint8_t byte;            // the byte that leads here from the parent
    int32_t subtree_end;     // preorder index one past the last descendant
    int32_t first_token;     // tokens ending here: sorted_ids()[first_token, first_token + token_count)
    int32_t token_count;
  };
  struct Body {
    std::vector<std::string> token_bytes;
    std::vector<int> end_ids;
    std::vector<int32_t> sorted_ids;  // non-empty, non-end tokens by their bytes (then id)
    std::vector<int32_t> rank;        // id -> index in sorted_ids, -1 when not there
    std::vector<TrieNode> trie;       // preorder; node 0 is the root (the empty prefix)
  };

  size_t size() const { return body_->token_bytes.size(); }
  const std::string& bytes(int id) const { return body_->token_bytes[size_t(id)]; }
  const std::vector<int>& end_ids() const { return body_->end_ids; }
  bool is_end(int id) const;
  const Body& body() const { return *body_; }

 private:
  std::shared_ptr<const Body> body_;
};

}  // namespace astrai::grammar
