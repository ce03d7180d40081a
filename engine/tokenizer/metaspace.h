// The '▁' (U+2581) rules of SentencePiece-style tokenizer.json files (Llama 2,
// Mistral 7B, TinyLlama): a space is spelled '▁', and a '▁' is put before the
// text (SentencePiece's dummy prefix). Hugging Face's converters write them in
// two ways, both read here:
//   - legacy: normalizer Sequence[Prepend("▁"), Replace(" " -> "▁")], no
//     pre-tokenizer. The normalizer runs on every segment between added
//     tokens, so each segment gets the prefix, even one starting with a space;
//   - Metaspace pre-tokenizer (replacement "▁", split false, prepend_scheme
//     "first" or "always"): the prefix only when the segment does not start
//     with '▁' already, and with "first" only for a segment at the very start
//     of the text (not one after an added token).
// Decoding undoes it: '▁' becomes a space and the first space is dropped.
// Gemma's files have a third form, with no dummy prefix at all: normalizer
// Replace(" " -> "▁") alone, a pre-tokenizer Split on " " (which finds no
// space left after the normalizer, so it splits nothing), and a decoder
// without the Strip (the first space is kept).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace astrai {

enum class Metaspace {
  None,          // a byte-level BPE: no '▁' at all
  EverySegment,  // the legacy normalizer
  First,         // Metaspace, prepend_scheme "first"
  Always,        // Metaspace, prepend_scheme "always"
  Never,         // Gemma: Replace(" " -> "▁") alone, no dummy prefix
};

// True for the legacy normalizer pair (anything else is not this function's
// to judge: the caller goes on to its other normalizers).
bool is_legacy_metaspace_normalizer(const nlohmann::json& normalizer);
// True for Gemma's normalizer, Replace(" " -> "▁") alone.
bool is_replace_only_metaspace_normalizer(const nlohmann::json& normalizer);
// Gemma's pre-tokenizer after that normalizer: null, or a Split on the
// String " " (a no-op on text without spaces); throws naming any other.
void check_replace_only_pre_tokenizer(const std::string& origin, const nlohmann::json& pre_tokenizer);

// A Metaspace pre-tokenizer -> First or Always. Throws std::runtime_error
// (prefixed by origin) for a replacement other than '▁', split true (or
// absent: Hugging Face's default is true), or prepend_scheme "never".
Metaspace parse_metaspace_pre_tokenizer(const std::string& origin, const nlohmann::json& pre_tokenizer);

// Accepts the decoders that undo `rule`: Metaspace, or
// Sequence[Replace("▁" -> " "), ByteFallback, Fuse, Strip(" ", 1, 0)]; for
// Never, Sequence[Replace("▁" -> " "), ByteFallback, Fuse] (no Strip);
// throws std::runtime_error naming any other.
void check_metaspace_decoder(const std::string& origin, const nlohmann::json& decoder, Metaspace rule);

// `segment` (non-empty text between added tokens) spelled with '▁', its
// prefix put as `rule` says; at_text_start: the segment begins the text.
std::string apply_metaspace(std::string_view segment, Metaspace rule, bool at_text_start);

// '▁' -> ' ' (a piece as the text it stands for).
std::string metaspace_to_spaces(std::string_view piece);

}  // namespace astrai
