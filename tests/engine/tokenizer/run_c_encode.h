// An independent oracle for the tests: llama2.c run.c's encode() transcribed
// as plainly as possible (a rescan of every adjacent pair after each merge,
// O(n^2)), using only the tokenizer's public piece/score tables. The engine's
// encoder uses a heap and a linked list instead; the tests check that both
// agree. Like the engine, this leaves BOS out of the merges (run.c includes it,
// which makes no difference unless some piece starts with the BOS piece; a test
// checks that none does in the real vocabularies).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace astrai::test {

class RunCEncoder {
 public:
  explicit RunCEncoder(const Tokenizer& tok) : tok_(tok) {
    // run.c sorts the vocabulary and bsearches it; a map plays that part here
    // (first id wins for a repeated piece).
    for (int id = 0; id < tok.vocab_size(); ++id) lookup_.emplace(tok.piece(id), id);
  }

  std::vector<int> encode(std::string_view text, bool add_bos) const;

 private:
  int find(std::string_view s) const {
    const auto it = lookup_.find(s);
    return it == lookup_.end() ? -1 : it->second;
  }
  int byte_fallback(unsigned char byte) const {
    static const char* hex = "0123456789ABCDEF";
    const int id = find(std::string{'<', '0', 'x', hex[byte >> 4], hex[byte & 15], '>'});
    return id >= 0 ? id : tok_.unk_id();
  }

  const Tokenizer& tok_;
  std::map<std::string, int, std::less<>> lookup_;
};

inline std::vector<int> RunCEncoder::encode(std::string_view text, bool add_bos) const {
  const Tokenizer& tok = tok_;

  std::vector<int> tokens;
  if (!text.empty()) {
    std::string_view dummy = " ";
    if (find(dummy) >= 0)
      tokens.push_back(find(dummy));
    else
      tokens.push_back(byte_fallback(' '));
  }
  std::string buffer;
  for (size_t i = 0; i < text.size(); ++i) {
    buffer += text[i];
    const bool next_continues = i + 1 < text.size() && (static_cast<unsigned char>(text[i + 1]) & 0xC0) == 0x80;
    if (next_continues && buffer.size() < 4) continue;
    if (const int id = find(buffer); id >= 0) {
      tokens.push_back(id);
    } else {
      for (const char c : buffer) tokens.push_back(byte_fallback(static_cast<unsigned char>(c)));
    }
    buffer.clear();
  }

  while (true) {
    float best_score = -1e10f;
    int best_id = -1, best_idx = -1;
    for (size_t i = 0; i + 1 < tokens.size(); ++i) {
      const int id = find(tok.piece(tokens[i]) + tok.piece(tokens[i + 1]));
      if (id != -1 && tok.score(id) > best_score) {
        best_score = tok.score(id);
        best_id = id;
        best_idx = int(i);
      }
    }
    if (best_idx == -1) break;
    tokens[size_t(best_idx)] = best_id;
    tokens.erase(tokens.begin() + best_idx + 1);
  }
  if (add_bos) tokens.insert(tokens.begin(), tok.bos_id());
  return tokens;
}

}  // namespace astrai::test
