// SentencePiece-style BPE tokenizer, as llama2.c's run.c and llama.cpp's
// `llama` (SPM) vocabulary implement it: a dummy space prefix, greedy merges of
// the highest-scoring adjacent pair, byte fallback <0xXX> for anything that is
// not in the vocabulary.
//
// Pieces are held with real spaces (' '), as llama2.c's tokenizer.bin stores
// them; GGUF files store SentencePiece's '▁' (U+2581), converted on load/save.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace astrai {

// GGUF's tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class TokenType : int32_t { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

class Tokenizer {
 public:
  // pieces, scores and types have one entry per id. Throws std::invalid_argument
  // when they disagree in length or bos/eos are out of range. Also rejected: an
  // unk id out of range, a NaN score, and a Byte-typed piece not spelled <0xXX>.
  // When a piece occurs twice, lookups find its lowest id.
  Tokenizer(std::vector<std::string> pieces, std::vector<float> scores, std::vector<TokenType> types,
            int bos_id = 1, int eos_id = 2, int unk_id = 0);

  // llama2.c's tokenizer.bin: int32 max_token_length, then per id a float32
  // score, an int32 length and the bytes. Token types are inferred (id 0
  // unknown, 1 and 2 control, <0xXX> byte, the rest normal). Throws
  // std::runtime_error naming the problem for a missing, truncated or corrupt file.
  // vocab_size 0 reads every piece in the file (the file stores no count).
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

  // The tokens after which a generation ends (unless the request ignores
  // EOS), as llama.cpp's end-of-generation set: EOS; BOS (llama2.c models end
  // a story by starting the next one); and every control or user-defined
  // token spelled as a chat format's end of turn or of text: <|eot_id|>,
  // <|eom_id|>, <|end_of_text|> (Llama 3), <|im_end|>, <|endoftext|>
  // (ChatML), <|end|> (Phi-3), <end_of_turn> (Gemma). A normal piece with the
  // same spelling is text, not a stop. Sorted, without repeats.
  const std::vector<int>& end_of_generation_ids() const { return end_of_generation_ids_; }

  // The id of the piece spelled exactly `text`, or -1 when there is none.
  int piece_id(std::string_view text) const;
  // The byte-fallback id for `byte`: the id of the piece "<0xXX>" (3 + byte in
  // llama2.c's files), or unk_id() when the vocabulary has no such piece.
  int byte_token(uint8_t byte) const;

 private:
  std::vector<std::string> pieces_;
  std::vector<float> scores_;
  std::vector<TokenType> types_;
  int bos_id_, eos_id_, unk_id_;
  std::vector<int> end_of_generation_ids_;

  // Heterogeneous lookup: find() takes a string_view without building a string.
  struct PieceHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, int, PieceHash, std::equal_to<>> piece_ids_;
  std::array<int, 256> byte_ids_{};
};

}  // namespace astrai
