// Tokenizer::from_hf_sentencepiece: a SentencePiece-style tokenizer.json
// (Llama 2, Mistral 7B) as a SentencePiece vocabulary whose encoding is
// Hugging Face's.
#include <algorithm>
#include <stdexcept>
#include <unordered_map>

#include "engine/tokenizer/byte_piece.h"
#include "engine/tokenizer/hf_tokenizer.h"
#include "engine/tokenizer/tokenizer.h"

namespace astrai {

namespace {

// At or below run.c's floor (tokenizer_encode.cpp): a piece that never merges.
constexpr float kNeverMerged = -1e10f;

// -(rank of the first merge that makes each piece). Hugging Face merges the
// pair of lowest rank; SentencePiece the pair whose piece scores highest. With
// these scores the two agree except when two different splits of one piece
// compete at once (Hugging Face ranks the splits, SentencePiece takes the
// leftmost), which the GGUF round-trip test measures on real text.
std::unordered_map<std::string, float> scores_from_merge_ranks(const BpeTokenizerParts& parts) {
  std::unordered_map<std::string, float> scores;
  for (size_t rank = 0; rank < parts.merges.size(); ++rank) {
    const auto& [a, b] = parts.merges[rank];
    scores.try_emplace(a + b, -float(rank));
  }
  return scores;
}

}  // namespace

Tokenizer Tokenizer::from_hf_sentencepiece(std::shared_ptr<const HfTokenizer> hf, int bos_id, int eos_id,
                                           std::vector<int> extra_end_ids, int vocab_size) {
  if (!hf || !hf->sentencepiece_style()) throw std::invalid_argument("Tokenizer: no SentencePiece-style tokenizer.json given");
  if (vocab_size != 0 && vocab_size < hf->vocab_size())
    throw std::invalid_argument("Tokenizer: vocab_size " + std::to_string(vocab_size) + " is below the tokenizer's " +
                                std::to_string(hf->vocab_size()) + " ids");
  const BpeTokenizerParts parts = hf->parts();
  if (parts.fallback.unk_id < 0) throw std::invalid_argument("Tokenizer: a SentencePiece vocabulary needs an unk_token");
  if (bos_id < 0) throw std::invalid_argument("Tokenizer: a SentencePiece vocabulary needs a bos_token");
  const auto n = size_t(std::max(vocab_size, hf->vocab_size()));
  std::vector<std::string> pieces(n);
  std::vector<float> scores(n, kNeverMerged);
  std::vector<TokenType> types(n, TokenType::Unused);
  for (size_t id = 0; id < n; ++id) pieces[id] = "[PAD" + std::to_string(id) + "]";  // as llama.cpp pads
  const auto merge_scores = scores_from_merge_ranks(parts);
  for (const auto& [piece, id] : parts.vocab) {
    const bool byte = parts.fallback.byte_fallback && parse_byte_piece(piece);
    pieces[size_t(id)] = byte ? piece : hf->token_bytes(id);
    types[size_t(id)] = byte ? TokenType::Byte : TokenType::Normal;
    if (const auto it = merge_scores.find(piece); it != merge_scores.end()) scores[size_t(id)] = it->second;
  }
  types[size_t(parts.fallback.unk_id)] = TokenType::Unknown;
  for (const AddedToken& a : parts.added) {
    pieces[size_t(a.id)] = hf->token_bytes(a.id);  // the text it decodes to: Gemma's "▁▁" is two spaces
    types[size_t(a.id)] = a.id == parts.fallback.unk_id ? TokenType::Unknown
                          : a.special                    ? TokenType::Control
                                                         : TokenType::UserDefined;
  }
  Tokenizer t(std::move(pieces), std::move(scores), std::move(types), bos_id, eos_id, parts.fallback.unk_id,
              hf->metaspace() != Metaspace::Never);
  for (const int id : extra_end_ids)
    if (id < 0 || size_t(id) >= n || t.types_[size_t(id)] == TokenType::Unused)
      throw std::invalid_argument("Tokenizer: end-of-generation id " + std::to_string(id) + " has no token");
  t.hf_sentencepiece_ = std::move(hf);
  t.index_pieces(std::move(extra_end_ids));  // again, now that padding is known to be padding
  return t;
}

}  // namespace astrai
