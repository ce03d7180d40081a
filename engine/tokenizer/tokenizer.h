// SentencePiece-style BPE tokenizer, as llama2.c's run.c and llama.cpp's
// `llama` (SPM) vocabulary implement it: a dummy space prefix, greedy merges of
// the highest-scoring adjacent pair, byte fallback <0xXX> for anything that is
// not in the vocabulary.
//
// Pieces are held with real spaces (' '), as llama2.c's tokenizer.bin stores
// them; GGUF files store SentencePiece's '▁' (U+2581), converted on load/save.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace astrai {

// GGUF's tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class TokenType : int32_t { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

class Tokenizer {
 public:
  // pieces, scores and types have one entry per id. Throws std::invalid_argument
  // when they disagree in length or bos/eos are out of range.
  Tokenizer(std::vector<std::string> pieces, std::vector<float> scores, std::vector<TokenType> types,
            int bos_id = 1, int eos_id = 2, int unk_id = 0);

  // llama2.c's tokenizer.bin: int32 max_token_length, then per id a float32
  // score, an int32 length and the bytes. Token types are inferred (id 0
  // unknown, 1 and 2 control, <0xXX> byte, the rest normal). Throws
  // std::runtime_error naming the problem for a missing, truncated or corrupt file.
  static Tokenizer load_llama2c(const std::string& path, int vocab_size);

  // Ids of `text`, BOS first when add_bos. Never fails: bytes outside the
  // vocabulary fall back to <0xXX> pieces.
  std::vector<int> encode(std::string_view text, bool add_bos = true) const;

  // The bytes one token stands for when it follows prev_token: a <0xXX> piece
  // gives its raw byte, and the leading space of the first piece after BOS is
  // dropped (the dummy prefix), as run.c's decode does. Control tokens give "".
  std::string decode_token(int prev_token, int token) const;
  // decode_token over a sequence; the sequence is read as if preceded by BOS
  // when it does not start with one, so decode(encode(s)) == s.
  std::string decode(std::span<const int> ids) const;

  int vocab_size() const { return int(pieces_.size()); }
  int bos_id() const { return bos_id_; }
  int eos_id() const { return eos_id_; }
  int unk_id() const { return unk_id_; }
  const std::string& piece(int id) const { return pieces_.at(size_t(id)); }
  float score(int id) const { return scores_.at(size_t(id)); }
  TokenType type(int id) const { return types_.at(size_t(id)); }
  const std::vector<std::string>& pieces() const { return pieces_; }
  const std::vector<float>& scores() const { return scores_; }
  const std::vector<TokenType>& types() const { return types_; }

 private:
  std::vector<std::string> pieces_;
  std::vector<float> scores_;
  std::vector<TokenType> types_;
  int bos_id_, eos_id_, unk_id_;
  // Implementation detail (lookup tables) is the implementer's choice.
};

}  // namespace astrai
