// Tokenizer construction (validation, lookup tables) and decoding. Encoding is
// in tokenizer_encode.cpp, llama2.c's file format in tokenizer_llama2c.cpp.
#include "engine/tokenizer/tokenizer.h"

#include <algorithm>

#include <cmath>
#include <stdexcept>

#include "engine/tokenizer/byte_piece.h"
#include "engine/tokenizer/harmony_tokens.h"
#include "engine/tokenizer/hf_tokenizer.h"

namespace astrai {

namespace {

void check_id_in_range(const char* what, int id, size_t vocab_size) {
  if (id < 0 || size_t(id) >= vocab_size)
    throw std::invalid_argument(std::string("Tokenizer: ") + what + " " + std::to_string(id) +
                                " is outside the vocabulary of " + std::to_string(vocab_size) + " pieces");
}

}  // namespace

Tokenizer::Tokenizer(std::vector<std::string> pieces, std::vector<float> scores, std::vector<TokenType> types,
                     int bos_id, int eos_id, int unk_id, bool add_space_prefix)
    : pieces_(std::move(pieces)),
      scores_(std::move(scores)),
      types_(std::move(types)),
      bos_id_(bos_id),
      eos_id_(eos_id),
      unk_id_(unk_id),
      add_space_prefix_(add_space_prefix) {
  if (scores_.size() != pieces_.size() || types_.size() != pieces_.size())
    throw std::invalid_argument("Tokenizer: " + std::to_string(pieces_.size()) + " pieces but " +
                                std::to_string(scores_.size()) + " scores and " + std::to_string(types_.size()) +
                                " token types");
  check_id_in_range("bos id", bos_id_, pieces_.size());
  check_id_in_range("eos id", eos_id_, pieces_.size());
  check_id_in_range("unk id", unk_id_, pieces_.size());

  for (size_t id = 0; id < pieces_.size(); ++id)
    if (std::isnan(scores_[id]))
      throw std::invalid_argument("Tokenizer: the score of id " + std::to_string(id) + " is NaN");
  index_pieces({});
}

Tokenizer::Tokenizer(std::shared_ptr<const HfTokenizer> bpe, int bos_id, int eos_id, std::vector<int> extra_end_ids,
                     int vocab_size)
    : bos_id_(bos_id), eos_id_(eos_id), unk_id_(-1), bpe_(std::move(bpe)) {
  if (!bpe_) throw std::invalid_argument("Tokenizer: no byte-level BPE given");
  if (vocab_size != 0 && vocab_size < bpe_->vocab_size())
    throw std::invalid_argument("Tokenizer: vocab_size " + std::to_string(vocab_size) + " is below the tokenizer's " +
                                std::to_string(bpe_->vocab_size()) + " ids");
  const auto n = size_t(std::max(vocab_size, bpe_->vocab_size()));
  pieces_.resize(n);
  scores_.assign(n, 0.0f);  // merges are ranked inside the BPE model, not scored per piece
  types_.assign(n, TokenType::Unused);
  for (size_t id = 0; id < n; ++id) {
    if (!bpe_->has_token(int(id))) continue;  // also every id past the tokenizer's own
    pieces_[id] = bpe_->token_bytes(int(id));
    types_[id] = TokenType::Normal;
  }
  for (const AddedToken& a : bpe_->added_tokens())
    types_[size_t(a.id)] = a.special ? TokenType::Control : TokenType::UserDefined;
  auto check_token = [&](const char* what, int id) {
    check_id_in_range(what, id, n);
    if (types_[size_t(id)] == TokenType::Unused)
      throw std::invalid_argument(std::string("Tokenizer: ") + what + " " + std::to_string(id) + " has no token");
  };
  if (bos_id_ != -1) check_token("bos id", bos_id_);
  check_token("eos id", eos_id_);
  for (const int id : extra_end_ids) check_token("end-of-generation id", id);
  index_pieces(std::move(extra_end_ids));
}

void Tokenizer::index_pieces(std::vector<int> extra_end_ids) {
  // gpt-oss: its message markers are text, its turn ends end the generation.
  const bool harmony = type_harmony_markers_as_text(pieces_, types_);
  piece_ids_.clear();
  special_ids_.clear();
  byte_ids_.fill(unk_id_);
  std::array<bool, 256> byte_seen{};
  piece_ids_.reserve(pieces_.size());
  for (size_t id = 0; id < pieces_.size(); ++id) {
    if (types_[id] == TokenType::Unused && (bpe_ || hf_sentencepiece_)) continue;  // ids tokenizer.json leaves out
    piece_ids_.try_emplace(pieces_[id], int(id));  // a repeated piece keeps its lowest id
    if (types_[id] == TokenType::Control || types_[id] == TokenType::UserDefined)
      if (!pieces_[id].empty()) special_ids_.push_back(int(id));
    if (types_[id] != TokenType::Byte) continue;
    const auto byte = parse_byte_piece(pieces_[id]);
    if (!byte)
      throw std::invalid_argument("Tokenizer: id " + std::to_string(id) + " has type Byte but its piece '" +
                                  pieces_[id] + "' is not of the form <0xXX>");
    if (!byte_seen[*byte]) byte_ids_[*byte] = int(id);
    byte_seen[*byte] = true;
  }
  std::stable_sort(special_ids_.begin(), special_ids_.end(),
                   [&](int a, int b) { return pieces_[size_t(a)].size() > pieces_[size_t(b)].size(); });
  std::vector<std::pair<std::string, int>> specials;
  for (const int id : special_ids_) specials.emplace_back(pieces_[size_t(id)], id);
  // llama.cpp's parse_special also cuts out <unk> typed in the text, as
  // tokenizer.json does (an added token there).
  for (size_t id = 0; id < pieces_.size(); ++id)
    if (types_[id] == TokenType::Unknown && !pieces_[id].empty()) specials.emplace_back(pieces_[id], int(id));
  special_matcher_ = AddedTokenMatcher(std::move(specials));

  static constexpr std::string_view kEndOfTurnPieces[] = {
      "<|eot_id|>", "<|eom_id|>", "<|end_of_text|>", "<|im_end|>", "<|endoftext|>", "<|end|>", "<end_of_turn>"};
  end_of_generation_ids_ = std::move(extra_end_ids);
  end_of_generation_ids_.push_back(eos_id_);
  if (!bpe_) end_of_generation_ids_.push_back(bos_id_);
  for (const int id : special_ids_) {
    const std::string& piece = pieces_[size_t(id)];
    const bool turn_end =
        std::find(std::begin(kEndOfTurnPieces), std::end(kEndOfTurnPieces), piece) != std::end(kEndOfTurnPieces);
    const bool harmony_end =
        std::find(std::begin(kHarmonyTurnEnds), std::end(kHarmonyTurnEnds), piece) != std::end(kHarmonyTurnEnds);
    // harmony's <|end|> ends a message (the answer follows the reasoning), not the turn
    if (harmony ? harmony_end || (turn_end && piece != "<|end|>") : turn_end) end_of_generation_ids_.push_back(id);
  }
  // Nor when a file names it an end (a GGUF's eot_token_id): llama.cpp drops
  // it from a harmony vocabulary's end-of-generation set the same way.
  if (harmony)
    std::erase_if(end_of_generation_ids_, [&](int id) { return pieces_[size_t(id)] == "<|end|>"; });
  std::sort(end_of_generation_ids_.begin(), end_of_generation_ids_.end());
  end_of_generation_ids_.erase(std::unique(end_of_generation_ids_.begin(), end_of_generation_ids_.end()),
                               end_of_generation_ids_.end());
}

int Tokenizer::piece_id(std::string_view text) const {
  const auto it = piece_ids_.find(text);
  return it == piece_ids_.end() ? -1 : it->second;
}

int Tokenizer::byte_token(uint8_t byte) const { return byte_ids_[byte]; }

std::string Tokenizer::decode_token(int prev_token, int token) const {
  if (token < 0 || size_t(token) >= pieces_.size())
    throw std::invalid_argument("Tokenizer::decode_token: id " + std::to_string(token) +
                                " is outside the vocabulary of " + std::to_string(pieces_.size()) + " pieces");
  const std::string& piece = pieces_[size_t(token)];
  switch (types_[size_t(token)]) {
    case TokenType::Control:
      return "";  // <s>, </s> mark sequence structure; they are not text
    case TokenType::Unused:
      return "";  // padding ([PAD123]): the model may emit it, it stands for no text
    case TokenType::Byte:
      return std::string(1, char(*parse_byte_piece(piece)));  // validated in the constructor
    default:
      break;
  }
  if (bpe_) return piece;  // byte-level pieces are the bytes themselves
  // The encoder put a space before the text (the dummy prefix); the first
  // piece after BOS carries it, so it is dropped there (run.c's decode).
  // Gemma's vocabulary puts no prefix (add_space_prefix false): nothing to drop.
  if (add_space_prefix_ && prev_token == bos_id_ && !piece.empty() && piece[0] == ' ') return piece.substr(1);
  return piece;
}

std::string Tokenizer::decode(std::span<const int> ids) const {
  std::string text;
  int prev = bos_id_;
  for (const int id : ids) {
    text += decode_token(prev, id);
    prev = id;
  }
  return text;
}

}  // namespace astrai
