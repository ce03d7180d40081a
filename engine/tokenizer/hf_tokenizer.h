// Hugging Face's tokenizer.json for BPE vocabularies of two families:
// byte-level (GPT-2 style: Llama 3, Qwen 2.5 / 3, Mistral Nemo) and
// SentencePiece-style (Llama 2, Mistral 7B, TinyLlama: '▁' for spaces, byte
// fallback). Encoding, as the `tokenizers` library does it:
//   1. added tokens: the text is cut at every added token (leftmost, longest
//      first); each becomes its id and takes no further part;
//   2. normalizer (NFC or none) on the text between added tokens;
//   3. pre-tokenizer: a `Split` regex (Isolated) cuts the text into words,
//      and ByteLevel spells each word's bytes in GPT-2's alphabet; or, for a
//      SentencePiece-style file, the segment is one word spelled with '▁'
//      (metaspace.h: the legacy normalizer or the Metaspace pre-tokenizer);
//   4. the BPE model turns each word into ids (bpe_model.h), with byte
//      fallback for SentencePiece-style vocabularies;
//   5. post-processor: with add_special, the ids TemplateProcessing puts
//      before the text (Llama 3.1's BOS); ByteLevel adds nothing.
// Supported components are exactly these; anything else is refused on load
// with an error naming it, never silently ignored.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/added_token_matcher.h"
#include "engine/tokenizer/bpe_model.h"
#include "engine/tokenizer/metaspace.h"
#include "engine/tokenizer/regex_split.h"

namespace astrai {

struct AddedToken {
  int id;
  std::string content;
  bool special;  // control tokens (<|begin_of_text|>); non-special ones (<think>) are text
  // Matched in the normalized text, spelled as the normalizer spells it
  // (Llama 2's files: "<s>" is found only as "▁<s>", after a space or at the
  // start of a segment). Only with the legacy '▁' normalizer; elsewhere the
  // text is not changed before matching and this makes no difference.
  bool normalized = false;
};

// Everything a BPE tokenizer is made of, whichever file it came from
// (tokenizer.json, or a GGUF `gpt2` vocabulary) or goes to.
struct BpeTokenizerParts {
  std::vector<std::pair<std::string, int>> vocab;  // pieces (byte-level alphabet, or with '▁') -> id
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  bool ignore_merges = false;
  std::vector<AddedToken> added;
  std::vector<int> prefix_ids;   // the post-processor's, e.g. BOS
  std::string split_pattern;     // the Split regex as tokenizer.json spells it; "" = whole segments
  bool nfc = false;
  Metaspace metaspace = Metaspace::None;  // not None: a SentencePiece-style vocabulary
  BpeFallback fallback;                   // byte_fallback, unk, fuse_unk
};

class HfTokenizer {
 public:
  // Throws std::runtime_error, prefixed by origin, for inconsistent parts.
  static HfTokenizer from_parts(BpeTokenizerParts parts, const std::string& origin);
  BpeTokenizerParts parts() const;

  // Throws std::runtime_error naming the file and the unsupported or
  // malformed part.
  static HfTokenizer load(const std::string& path);
  static HfTokenizer parse(std::string_view json_text, const std::string& origin = "tokenizer.json");

  // Ids of `text`; with add_special, the post-processor's prefix (BOS) first.
  std::vector<int> encode(std::string_view text, bool add_special) const;

  // The bytes token `id` stands for: a vocabulary piece's bytes ('▁' as a
  // space, a <0xXX> piece as its byte), an added token's content. Throws
  // std::invalid_argument for an id with no token.
  std::string token_bytes(int id) const;
  // Concatenated token_bytes, special tokens left out when skip_special;
  // SentencePiece-style: without the first space (the dummy prefix).
  std::string decode(std::span<const int> ids, bool skip_special) const;

  // One more than the largest id (ids between may have no token).
  int vocab_size() const { return int(id_bytes_.size()); }
  bool has_token(int id) const { return id >= 0 && id < vocab_size() && has_token_[size_t(id)]; }
  bool is_special(int id) const;
  const std::vector<AddedToken>& added_tokens() const { return added_; }
  const std::vector<int>& prefix_ids() const { return prefix_ids_; }  // from the post-processor
  bool normalizes_nfc() const { return nfc_; }
  Metaspace metaspace() const { return metaspace_; }
  bool sentencepiece_style() const { return metaspace_ != Metaspace::None; }
  const BpeModel& model() const { return model_; }

 private:
  HfTokenizer(BpeModel model, std::optional<RegexSplit> split) : model_(std::move(model)), split_(std::move(split)) {}
  // A vocabulary piece as the bytes it stands for.
  std::string piece_bytes(const std::string& piece) const;
  // Steps 2-4 for one segment between added tokens; at_text_start: it begins the text.
  void encode_text(std::string_view text, bool at_text_start, std::vector<int>& out) const;
  // The legacy '▁' normalizer with normalized added tokens: the segment is
  // normalized first, then cut at the tokens' normalized spellings.
  void encode_normalized_segment(std::string_view text, std::vector<int>& out) const;

  BpeModel model_;
  std::optional<RegexSplit> split_;  // none: the whole segment is one word
  std::string split_pattern_;        // as given, before RegexSplit's rewrite
  bool nfc_ = false;
  Metaspace metaspace_ = Metaspace::None;
  std::vector<AddedToken> added_;  // sorted by content length, longest first
  AddedTokenMatcher raw_added_;         // matched in the text as given
  AddedTokenMatcher normalized_added_;  // matched after the legacy '▁' normalizer
  std::vector<int> prefix_ids_;
  std::vector<std::string> id_bytes_;  // token_bytes per id
  std::vector<bool> has_token_;
};

}  // namespace astrai
