// The engine's tokenizer: ids <-> text for one of two kinds of vocabulary.
//
// SentencePiece: BPE as llama2.c's run.c and llama.cpp's `llama` (SPM)
// vocabulary implement it: a dummy space prefix (unless the vocabulary says
// none, as Gemma's does: GGUF's tokenizer.ggml.add_space_prefix false), greedy merges of the
// highest-scoring adjacent pair, byte fallback <0xXX> for anything that is not
// in the vocabulary. Pieces are held with real spaces (' '), as llama2.c's
// tokenizer.bin stores them; GGUF files store SentencePiece's '▁' (U+2581),
// converted on load/save.
//
// A SentencePiece vocabulary may also come from a SentencePiece-style
// tokenizer.json (Llama 2, Mistral 7B): then encode() is Hugging Face's
// (HfTokenizer: merges by rank, added tokens matched in the text) and the
// scores are derived from the merge ranks (see from_hf_sentencepiece).
//
// ByteLevelBpe: Hugging Face's tokenizer.json for GPT-2-style vocabularies
// (Llama 3, Qwen 2.5 / 3, Mistral Nemo), encoded by HfTokenizer
// (hf_tokenizer.h) exactly as the `tokenizers` library does. Here pieces()
// are the bytes each id stands for; added tokens are Control (special) or
// UserDefined (e.g. Qwen 3's <think>); ids without a token are Unused.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/tokenizer/added_token_matcher.h"

namespace astrai {

class HfTokenizer;

enum class TokenizerKind { SentencePiece, ByteLevelBpe };

// GGUF's tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class TokenType : int32_t { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

class Tokenizer {
 public:
  // pieces, scores and types have one entry per id. Throws std::invalid_argument
  // when they disagree in length or bos/eos are out of range. Also rejected: an
  // unk id out of range, a NaN score, and a Byte-typed piece not spelled <0xXX>.
  // When a piece occurs twice, lookups find its lowest id. add_space_prefix
  // false: no dummy prefix before the text (Gemma), so none is dropped on decode.
  Tokenizer(std::vector<std::string> pieces, std::vector<float> scores, std::vector<TokenType> types,
            int bos_id = 1, int eos_id = 2, int unk_id = 0, bool add_space_prefix = true);

  // llama2.c's tokenizer.bin: int32 max_token_length, then per id a float32
  // score, an int32 length and the bytes. Token types are inferred (id 0
  // unknown, 1 and 2 control, <0xXX> byte, the rest normal). Throws
  // std::runtime_error naming the problem for a missing, truncated or corrupt file.
  // vocab_size 0 reads every piece in the file (the file stores no count).
  static Tokenizer load_llama2c(const std::string& path, int vocab_size);

  // A byte-level BPE vocabulary. bos_id is -1 when the vocabulary has none
  // (Qwen); extra_end_ids (generation_config.json's eos_token_id list) join
  // the end-of-generation set. vocab_size pads the vocabulary with Unused ids
  // up to the model's (Qwen's embedding has 151,936 rows for 151,669 tokens);
  // 0 keeps the tokenizer's own. Throws std::invalid_argument for a BOS, EOS
  // or end id with no token, or a vocab_size below the tokenizer's.
  Tokenizer(std::shared_ptr<const HfTokenizer> bpe, int bos_id, int eos_id, std::vector<int> extra_end_ids = {},
            int vocab_size = 0);

  // A SentencePiece-style tokenizer.json (hf->sentencepiece_style()) as a
  // SentencePiece vocabulary: pieces with real spaces ('▁' replaced), byte
  // pieces typed Byte, the unk_token Unknown, added tokens Control (special)
  // or UserDefined, ids up to vocab_size padded as "[PADn]" Unused. Scores:
  // -(rank of the first merge that makes the piece), so that the score-based
  // SentencePiece merge (a GGUF `llama` vocabulary) picks what Hugging Face's
  // rank-based merge picks; a piece no merge makes gets -1e10 (never merged).
  // encode() and encode_with_special_tokens() are hf's. Throws
  // std::invalid_argument as the byte-level constructor does, and for a
  // tokenizer without an unk_token.
  static Tokenizer from_hf_sentencepiece(std::shared_ptr<const HfTokenizer> hf, int bos_id, int eos_id,
                                         std::vector<int> extra_end_ids = {}, int vocab_size = 0);

  // tokenizer.json plus tokenizer_config.json, whose bos_token and eos_token
  // (a string, an {"content": ...} object or null) name the BOS and EOS ids.
  // Throws std::runtime_error naming the file and the problem.
  static Tokenizer load_hf(const std::string& tokenizer_json_path, const std::string& tokenizer_config_path,
                           std::vector<int> extra_end_ids = {}, int vocab_size = 0);
  // The same for a tokenizer.json already parsed (`origin` names it in
  // errors): a caller that needs the file's own size first (to pad the
  // vocabulary) parses the megabytes of JSON once.
  static Tokenizer load_hf(std::shared_ptr<const HfTokenizer> hf, const std::string& origin,
                           const std::string& tokenizer_config_path, std::vector<int> extra_end_ids = {},
                           int vocab_size = 0);

  TokenizerKind kind() const { return bpe_ ? TokenizerKind::ByteLevelBpe : TokenizerKind::SentencePiece; }
  // The byte-level BPE behind a ByteLevelBpe tokenizer, else nullptr.
  const HfTokenizer* byte_level_bpe() const { return bpe_.get(); }
  // The tokenizer.json encoder of a SentencePiece vocabulary loaded from one, else nullptr.
  const HfTokenizer* hf_sentencepiece() const { return hf_sentencepiece_.get(); }

  // Ids of `text`, after the tokenizer's own prefix when add_bos: BOS for
  // SentencePiece; for tokenizer.json the post-processor's prefix (BOS for
  // Llama 2 and 3.1, nothing for Qwen). Never fails: SentencePiece falls back
  // to <0xXX> pieces, byte-level BPE has every byte. SentencePiece spells out
  // special pieces typed in the text ("<s>" is text, as run.c does); a
  // tokenizer.json turns them into their ids, as Hugging Face's tokenizers do.
  std::vector<int> encode(std::string_view text, bool add_bos = true) const;

  // Ids of a prompt rendered by a chat template, with its special tokens
  // spelled out ("<|im_start|>user..."), without any prefix: every control,
  // user-defined or unknown piece in the text becomes its id (the longest at
  // each place; llama.cpp's parse_special matches <unk> too),
  // the text between is encoded as by encode(run, false). This is how
  // transformers' apply_chat_template and llama.cpp (parse_special) tokenize.
  std::vector<int> encode_with_special_tokens(std::string_view text) const;

  // The bytes one token stands for when it follows prev_token: a <0xXX> piece
  // gives its raw byte, and (SentencePiece) the leading space of the first
  // piece after BOS is dropped (the dummy prefix), as run.c's decode does.
  // Control tokens give "" (vLLM's skip_special_tokens), and so do the
  // Unused (padding) ids of every vocabulary.
  std::string decode_token(int prev_token, int token) const;
  // decode_token over a sequence; the sequence is read as if preceded by BOS
  // when it does not start with one, so decode(encode(s)) == s.
  std::string decode(std::span<const int> ids) const;

  int vocab_size() const { return int(pieces_.size()); }
  int bos_id() const { return bos_id_; }
  int eos_id() const { return eos_id_; }
  int unk_id() const { return unk_id_; }
  // SentencePiece: whether encode() puts a space before the text (the dummy prefix).
  bool add_space_prefix() const { return add_space_prefix_; }
  const std::string& piece(int id) const { return pieces_.at(size_t(id)); }
  float score(int id) const { return scores_.at(size_t(id)); }
  TokenType type(int id) const { return types_.at(size_t(id)); }
  const std::vector<std::string>& pieces() const { return pieces_; }
  const std::vector<float>& scores() const { return scores_; }
  const std::vector<TokenType>& types() const { return types_; }

  // The tokens after which a generation ends (unless the request ignores
  // EOS), as llama.cpp's end-of-generation set: EOS; the extra end ids; BOS
  // of a SentencePiece vocabulary (llama2.c models end a story by starting
  // the next one); and every control or user-defined
  // token spelled as a chat format's end of turn or of text: <|eot_id|>,
  // <|eom_id|>, <|end_of_text|> (Llama 3), <|im_end|>, <|endoftext|>
  // (ChatML), <|end|> (Phi-3), <end_of_turn> (Gemma). A normal piece with the
  // same spelling is text, not a stop. Sorted, without repeats.
  const std::vector<int>& end_of_generation_ids() const { return end_of_generation_ids_; }

  // The id of the piece spelled exactly `text`, or -1 when there is none
  // (Unused ids are never found).
  int piece_id(std::string_view text) const;
  // The byte-fallback id for `byte`: the id of the piece "<0xXX>" (3 + byte in
  // llama2.c's files), or unk_id() when the vocabulary has no such piece.
  int byte_token(uint8_t byte) const;

 private:
  std::vector<std::string> pieces_;
  std::vector<float> scores_;
  std::vector<TokenType> types_;
  int bos_id_, eos_id_, unk_id_;
  bool add_space_prefix_ = true;
  std::vector<int> end_of_generation_ids_;
  std::vector<int> special_ids_;  // Control and UserDefined ids, longest piece first
  AddedTokenMatcher special_matcher_;  // the same pieces and Unknown ones, for encode_with_special_tokens (SentencePiece)
  std::shared_ptr<const HfTokenizer> bpe_;  // set for ByteLevelBpe
  std::shared_ptr<const HfTokenizer> hf_sentencepiece_;  // set for a SentencePiece tokenizer.json

  // Heterogeneous lookup: find() takes a string_view without building a string.
  struct PieceHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, int, PieceHash, std::equal_to<>> piece_ids_;
  std::array<int, 256> byte_ids_{};

  // Lookup tables and the end-of-generation set, once pieces and types are set.
  void index_pieces(std::vector<int> extra_end_ids);
};

}  // namespace astrai
