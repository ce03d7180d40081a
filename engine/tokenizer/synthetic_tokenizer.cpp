// Deterministic synthetic vocabularies (see synthetic_tokenizer.h).
#include "engine/tokenizer/synthetic_tokenizer.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace astrai {
namespace {

// Appends every lower-case word of length k, in lexicographic order, with and
// (k >= 2) without a leading space, until `pieces` holds `limit` entries.
void append_words(std::vector<std::string>& pieces, size_t k, size_t limit) {
  std::string word(k, 'a');
  while (pieces.size() < limit) {
    pieces.push_back(" " + word);
    if (k >= 2 && pieces.size() < limit) pieces.push_back(word);
    // Next word: increment the base-26 counter from the right.
    size_t i = k;
    while (i > 0 && word[i - 1] == 'z') word[--i] = 'a';
    if (i == 0) return;  // all words of length k done
    ++word[i - 1];
  }
}

}  // namespace

Tokenizer make_synthetic_tokenizer(int vocab_size) {
  if (vocab_size < kSyntheticTokenizerMinVocab)
    throw std::invalid_argument("make_synthetic_tokenizer: vocab_size " + std::to_string(vocab_size) +
                                " is below " + std::to_string(kSyntheticTokenizerMinVocab) +
                                " (3 special pieces and 256 byte pieces)");
  const size_t n = size_t(vocab_size);
  std::vector<std::string> pieces = {"<unk>", "<s>", "</s>"};
  pieces.reserve(n);
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) pieces.push_back(std::string{'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'});
  for (char c = ' '; c <= '~' && pieces.size() < n; ++c) pieces.push_back(std::string(1, c));
  for (size_t k = 1; pieces.size() < n; ++k) append_words(pieces, k, n);

  std::vector<float> scores(n, 0.0f);
  std::vector<TokenType> types(n, TokenType::Normal);
  types[0] = TokenType::Unknown;
  types[1] = types[2] = TokenType::Control;
  for (size_t id = 3; id < size_t(kSyntheticTokenizerMinVocab); ++id) types[id] = TokenType::Byte;
  for (size_t id = size_t(kSyntheticTokenizerMinVocab); id < n; ++id)
    scores[id] = -float(id - size_t(kSyntheticTokenizerMinVocab));
  return Tokenizer(std::move(pieces), std::move(scores), std::move(types), 1, 2, 0);
}

}  // namespace astrai
