// Hugging Face's tokenizer.json for byte-level BPE vocabularies (GPT-2 style:
// Llama 3, Qwen 2.5 / 3, Mistral Nemo). Encoding, as the `tokenizers` library
// does it:
//   1. added tokens: the text is cut at every added token (leftmost, longest
//      first); each becomes its id and takes no further part;
//   2. normalizer (NFC or none) on the text between added tokens;
//   3. pre-tokenizer: a `Split` regex (Isolated) cuts the text into words,
//      and ByteLevel spells each word's bytes in GPT-2's alphabet;
//   4. the BPE model turns each word into ids (bpe_model.h);
//   5. post-processor: with add_special, the ids TemplateProcessing puts
//      before the text (Llama 3.1's BOS); ByteLevel adds nothing.
// Supported components are exactly these; anything else is refused on load
// with an error naming it, never silently ignored.
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/bpe_model.h"
#include "engine/tokenizer/regex_split.h"

namespace astrai {

struct AddedToken {
  int id;
  std::string content;
  bool special;  // control tokens (<|begin_of_text|>); non-special ones (<think>) are text
};

// Everything a byte-level BPE tokenizer is made of, whichever file it came
// from (tokenizer.json, or a GGUF `gpt2` vocabulary) or goes to.
struct ByteLevelBpeParts {
  std::vector<std::pair<std::string, int>> vocab;  // pieces in the byte-level alphabet -> id
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  bool ignore_merges = false;
  std::vector<AddedToken> added;
  std::vector<int> prefix_ids;   // the post-processor's, e.g. BOS
  std::string split_pattern;     // the Split regex as tokenizer.json spells it; "" = whole segments
  bool nfc = false;
};

class HfTokenizer {
 public:
  // Throws std::runtime_error, prefixed by origin, for inconsistent parts.
  static HfTokenizer from_parts(ByteLevelBpeParts parts, const std::string& origin);
  ByteLevelBpeParts parts() const;

  // Throws std::runtime_error naming the file and the unsupported or
  // malformed part.
  static HfTokenizer load(const std::string& path);
  static HfTokenizer parse(std::string_view json_text, const std::string& origin = "tokenizer.json");

  // Ids of `text`; with add_special, the post-processor's prefix (BOS) first.
  std::vector<int> encode(std::string_view text, bool add_special) const;

  // The bytes token `id` stands for: a vocabulary piece's bytes, an added
  // token's content. Throws std::invalid_argument for an id with no token.
  std::string token_bytes(int id) const;
  // Concatenated token_bytes, special tokens left out when skip_special.
  std::string decode(std::span<const int> ids, bool skip_special) const;

  // One more than the largest id (ids between may have no token).
  int vocab_size() const { return int(id_bytes_.size()); }
  bool has_token(int id) const { return id >= 0 && id < vocab_size() && has_token_[size_t(id)]; }
  bool is_special(int id) const;
  const std::vector<AddedToken>& added_tokens() const { return added_; }
  const std::vector<int>& prefix_ids() const { return prefix_ids_; }  // from the post-processor
  bool normalizes_nfc() const { return nfc_; }

 private:
  HfTokenizer(BpeModel model, std::optional<RegexSplit> split) : model_(std::move(model)), split_(std::move(split)) {}
  void encode_text(std::string_view text, std::vector<int>& out) const;  // steps 2-4

  BpeModel model_;
  std::optional<RegexSplit> split_;  // none: the whole segment is one word
  std::string split_pattern_;        // as given, before RegexSplit's rewrite
  bool nfc_ = false;
  std::vector<AddedToken> added_;  // sorted by content length, longest first
  // Indices into added_ (longest first) by the first byte of the content, so
  // that the scan for added tokens looks only at those that can start here.
  std::array<std::vector<size_t>, 256> added_by_first_byte_;
  std::vector<int> prefix_ids_;
  std::vector<std::string> id_bytes_;  // token_bytes per id
  std::vector<bool> has_token_;
};

}  // namespace astrai
