// TokenVocabulary::from_tokenizer, compiled into libastrai beside the tokenizer.
#include "engine/grammar/token_vocabulary.h"
#include "engine/tokenizer/byte_piece.h"
#include "engine/tokenizer/tokenizer.h"

namespace astrai::grammar {

TokenVocabulary TokenVocabulary::from_tokenizer(const Tokenizer& tokenizer) {
  std::vector<std::string> bytes(size_t(tokenizer.vocab_size()));
  for (int id = 0; id < tokenizer.vocab_size(); ++id) {
    const TokenType type = tokenizer.type(id);
    if (type == TokenType::Control || type == TokenType::Unused || type == TokenType::Unknown) continue;
    if (type == TokenType::Byte) {
      if (const auto b = parse_byte_piece(tokenizer.piece(id))) bytes[size_t(id)] = std::string(1, char(*b));
      continue;
    }
    bytes[size_t(id)] = tokenizer.piece(id);
  }
  return TokenVocabulary(std::move(bytes), tokenizer.end_of_generation_ids());
}

}  // namespace astrai::grammar
