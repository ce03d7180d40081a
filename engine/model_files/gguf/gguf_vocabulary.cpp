#include "engine/model_files/gguf/gguf_vocabulary.h"

#include <limits>
#include <stdexcept>

#include "engine/tokenizer/bpe_pre_tokenizers.h"
#include "engine/tokenizer/hf_tokenizer.h"

namespace astrai {
namespace {

constexpr const char* kSentencePieceSpace = "\xE2\x96\x81";  // U+2581 '▁'

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

TokenType token_type_from(const GgufReader& g, int64_t v, size_t id) {
  if (v < int64_t(TokenType::Normal) || v > int64_t(TokenType::Byte))
    throw std::runtime_error(g.path() + ": tokenizer.ggml.token_type of id " + std::to_string(id) + " is " +
                             std::to_string(v) + ", not a llama token type (1-6)");
  return TokenType(v);
}

int token_id(const GgufReader& g, const std::string& key, int fallback) {
  if (!g.has(key)) return fallback;
  const int64_t v = g.get_int(key);
  if (v < 0 || v > std::numeric_limits<int32_t>::max())
    throw std::runtime_error(g.path() + ": metadata key '" + key + "' is " + std::to_string(v) + ", not a token id");
  return int(v);
}

std::vector<TokenType> read_token_types(const GgufReader& g, size_t n) {
  std::vector<TokenType> types(n, TokenType::Normal);
  if (!g.has("tokenizer.ggml.token_type")) return types;
  const auto raw = g.get_int_array("tokenizer.ggml.token_type");
  if (raw.size() != n)
    throw std::runtime_error(g.path() + ": tokenizer.ggml.token_type has " + std::to_string(raw.size()) +
                             " entries for " + std::to_string(n) + " tokens");
  for (size_t i = 0; i < n; ++i) types[i] = token_type_from(g, raw[i], i);
  return types;
}

// A piece as the file spells it -> as Tokenizer holds it. Normal and unknown
// pieces spell spaces '▁'; control and user-defined ones are matched in the
// raw text, so llama.cpp's converter stores them with real spaces (Gemma's
// whitespace runs) and so do we: they are read as written.
bool spells_spaces_as_metaspace(TokenType type) { return type != TokenType::Control && type != TokenType::UserDefined; }

Tokenizer read_sentencepiece(const GgufReader& g, std::vector<std::string> pieces) {
  const size_t n = pieces.size();
  std::vector<float> scores(n, 0.0f);
  if (g.has("tokenizer.ggml.scores")) scores = g.get_float_array("tokenizer.ggml.scores");
  std::vector<TokenType> types = read_token_types(g, n);
  for (size_t id = 0; id < n; ++id)
    if (spells_spaces_as_metaspace(types[id])) pieces[id] = replace_all(std::move(pieces[id]), kSentencePieceSpace, " ");
  // llama.cpp's default is true; Gemma's files say false.
  const bool add_space_prefix =
      !g.has("tokenizer.ggml.add_space_prefix") || g.get_bool("tokenizer.ggml.add_space_prefix");
  try {
    return Tokenizer(std::move(pieces), std::move(scores), std::move(types),
                     token_id(g, "tokenizer.ggml.bos_token_id", 1), token_id(g, "tokenizer.ggml.eos_token_id", 2),
                     token_id(g, "tokenizer.ggml.unknown_token_id", 0), add_space_prefix);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(g.path() + ": invalid tokenizer: " + e.what());
  }
}

Tokenizer read_byte_level(const GgufReader& g, const std::vector<std::string>& tokens) {
  // llama.cpp writes no tokenizer.ggml.pre for GPT-2 itself ("default").
  const std::string pre_name = g.has("tokenizer.ggml.pre") ? g.get_string("tokenizer.ggml.pre") : "gpt-2";
  const BpePreTokenizer* pre = find_bpe_pre_tokenizer(pre_name == "default" ? "gpt-2" : pre_name);
  if (!pre)
    throw std::runtime_error(g.path() + ": tokenizer.ggml.pre '" + pre_name + "' is not supported (known: " +
                             std::string(known_bpe_pre_tokenizer_names()) + ")");
  const std::vector<TokenType> types = read_token_types(g, tokens.size());
  BpeTokenizerParts parts;
  parts.split_pattern = pre->pattern;
  parts.nfc = pre->nfc;
  parts.ignore_merges = pre->ignore_merges;
  for (size_t id = 0; id < tokens.size(); ++id) {
    switch (types[id]) {
      case TokenType::Normal: parts.vocab.emplace_back(tokens[id], int(id)); break;
      case TokenType::Control: parts.added.push_back({int(id), tokens[id], true}); break;
      case TokenType::UserDefined: parts.added.push_back({int(id), tokens[id], false}); break;
      case TokenType::Unused: break;  // padding ids ([PAD123]) stand for nothing
      default:
        throw std::runtime_error(g.path() + ": token " + std::to_string(id) + " of a gpt2 vocabulary has type " +
                                 std::to_string(int(types[id])) + " (expected normal, control, user-defined or unused)");
    }
  }
  for (const std::string& merge : g.get_string_array("tokenizer.ggml.merges")) {
    const size_t space = merge.find(' ');
    if (space == std::string::npos || merge.find(' ', space + 1) != std::string::npos)
      throw std::runtime_error(g.path() + ": malformed merge '" + merge + "' in tokenizer.ggml.merges");
    parts.merges.emplace_back(merge.substr(0, space), merge.substr(space + 1));
  }
  const int bos = token_id(g, "tokenizer.ggml.bos_token_id", -1);
  if (g.has("tokenizer.ggml.add_bos_token") && g.get_bool("tokenizer.ggml.add_bos_token")) {
    if (bos < 0) throw std::runtime_error(g.path() + ": tokenizer.ggml.add_bos_token is true without a bos_token_id");
    parts.prefix_ids = {bos};
  }
  if (!g.has("tokenizer.ggml.eos_token_id"))
    throw std::runtime_error(g.path() + ": a gpt2 vocabulary needs tokenizer.ggml.eos_token_id");
  std::vector<int> end_ids;
  for (const char* key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"})
    if (const int id = token_id(g, key, -1); id >= 0) end_ids.push_back(id);
  try {
    auto bpe = std::make_shared<const HfTokenizer>(HfTokenizer::from_parts(std::move(parts), g.path()));
    return Tokenizer(std::move(bpe), bos, token_id(g, "tokenizer.ggml.eos_token_id", -1), std::move(end_ids),
                     int(tokens.size()));
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(g.path() + ": invalid tokenizer: " + e.what());
  }
}

// A vocabulary from a SentencePiece-style tokenizer.json is written as
// llama.cpp's convert_hf_to_gguf writes one (tokens with '▁', scores, types
// with the byte pieces), but only when a SentencePiece encoder reading it
// gives Hugging Face's ids: the legacy '▁' normalizer (a dummy prefix on
// every segment, as encode_with_special_tokens does) or Gemma's (no prefix at
// all: add_space_prefix false), byte fallback, merges by rank (the scores,
// Tokenizer::from_hf_sentencepiece). Gemma's user-defined whitespace runs
// ("▁▁", ...) are written with real spaces, as llama.cpp's converter writes
// them, so llama.cpp and this reader match them in the raw text before any
// merge, as SentencePiece matches user-defined symbols; on the texts of
// test_gguf_sentencepiece_json that gives Hugging Face's ids too.
void check_sentencepiece_gguf(const HfTokenizer& hf) {
  const BpeTokenizerParts parts = hf.parts();
  if (hf.metaspace() != Metaspace::EverySegment && hf.metaspace() != Metaspace::Never)
    throw std::invalid_argument("GGUF: a Metaspace pre-tokenizer (prefix only on the first segment, or not before a "
                                "space) has no llama vocabulary equivalent; the legacy '▁' normalizer and Gemma's "
                                "prefix-free one have");
  if (!parts.fallback.byte_fallback) throw std::invalid_argument("GGUF: a SentencePiece vocabulary without byte_fallback");
  if (parts.ignore_merges) throw std::invalid_argument("GGUF: a SentencePiece vocabulary with ignore_merges");
  for (const AddedToken& a : parts.added)
    if (a.normalized)
      throw std::invalid_argument("GGUF: added token '" + a.content + "' is normalized (matched only after a space, "
                                  "as '▁" + a.content + "'); a llama vocabulary matches special pieces anywhere");
}

void add_sentencepiece(GgufWriter& out, const Tokenizer& tok) {
  if (tok.hf_sentencepiece()) check_sentencepiece_gguf(*tok.hf_sentencepiece());
  std::vector<std::string> pieces;
  pieces.reserve(size_t(tok.vocab_size()));
  for (size_t id = 0; id < size_t(tok.vocab_size()); ++id)
    pieces.push_back(spells_spaces_as_metaspace(tok.types()[id]) ? replace_all(tok.pieces()[id], " ", kSentencePieceSpace)
                                                                  : tok.pieces()[id]);
  std::vector<int32_t> types;
  types.reserve(pieces.size());
  for (const auto t : tok.types()) types.push_back(int32_t(t));
  out.add_metadata("tokenizer.ggml.model", "llama");
  out.add_metadata("tokenizer.ggml.tokens", make_gguf_array(pieces));
  out.add_metadata("tokenizer.ggml.scores", make_gguf_array(tok.scores()));
  out.add_metadata("tokenizer.ggml.token_type", make_gguf_array(types));
  out.add_metadata("tokenizer.ggml.bos_token_id", uint32_t(tok.bos_id()));
  out.add_metadata("tokenizer.ggml.eos_token_id", uint32_t(tok.eos_id()));
  out.add_metadata("tokenizer.ggml.unknown_token_id", uint32_t(tok.unk_id()));
  if (!tok.add_space_prefix()) out.add_metadata("tokenizer.ggml.add_space_prefix", false);
}

void add_byte_level(GgufWriter& out, const Tokenizer& tok) {
  const BpeTokenizerParts parts = tok.byte_level_bpe()->parts();
  const BpePreTokenizer* pre = find_bpe_pre_tokenizer(parts.split_pattern, parts.nfc, parts.ignore_merges);
  if (!pre)
    throw std::invalid_argument("GGUF: this tokenizer's pre-tokenizer (Split regex, normalizer, ignore_merges) is "
                                "none of those GGUF names (" + std::string(known_bpe_pre_tokenizer_names()) + ")");
  const bool add_bos = !parts.prefix_ids.empty();
  if (add_bos && parts.prefix_ids != std::vector<int>{tok.bos_id()})
    throw std::invalid_argument("GGUF: the post-processor puts ids other than BOS before the text");
  // Every id gets a token: vocabulary pieces as spelled in the byte-level
  // alphabet, added tokens as their text, ids without one as llama.cpp pads them.
  const auto n = size_t(tok.vocab_size());
  std::vector<std::string> tokens(n);
  std::vector<int32_t> types(n, int32_t(TokenType::Unused));
  for (size_t id = 0; id < n; ++id) tokens[id] = "[PAD" + std::to_string(id) + "]";
  for (const auto& [piece, id] : parts.vocab) {
    tokens[size_t(id)] = piece;
    types[size_t(id)] = int32_t(TokenType::Normal);
  }
  for (const AddedToken& a : parts.added) {
    tokens[size_t(a.id)] = a.content;
    types[size_t(a.id)] = int32_t(a.special ? TokenType::Control : TokenType::UserDefined);
  }
  std::vector<std::string> merges;
  merges.reserve(parts.merges.size());
  for (const auto& [a, b] : parts.merges) merges.push_back(a + " " + b);
  out.add_metadata("tokenizer.ggml.model", "gpt2");
  out.add_metadata("tokenizer.ggml.pre", std::string(pre->gguf_name));
  out.add_metadata("tokenizer.ggml.tokens", make_gguf_array(tokens));
  out.add_metadata("tokenizer.ggml.token_type", make_gguf_array(types));
  out.add_metadata("tokenizer.ggml.merges", make_gguf_array(merges));
  if (tok.bos_id() >= 0) out.add_metadata("tokenizer.ggml.bos_token_id", uint32_t(tok.bos_id()));
  out.add_metadata("tokenizer.ggml.eos_token_id", uint32_t(tok.eos_id()));
  out.add_metadata("tokenizer.ggml.add_bos_token", add_bos);
}

}  // namespace

Tokenizer read_gguf_tokenizer(const GgufReader& g, int vocab_size) {
  const std::string model = g.get_string("tokenizer.ggml.model");
  if (model != "llama" && model != "gpt2")
    throw std::runtime_error(g.path() + ": tokenizer.ggml.model '" + model +
                             "' is not supported (SentencePiece 'llama' and byte-level BPE 'gpt2' are)");
  std::vector<std::string> tokens = g.get_string_array("tokenizer.ggml.tokens");
  if (tokens.size() != size_t(vocab_size))
    throw std::runtime_error(g.path() + ": tokenizer has " + std::to_string(tokens.size()) +
                             " tokens, the model's vocabulary " + std::to_string(vocab_size));
  return model == "llama" ? read_sentencepiece(g, std::move(tokens)) : read_byte_level(g, tokens);
}

void add_gguf_tokenizer(GgufWriter& out, const Tokenizer& tokenizer) {
  if (tokenizer.kind() == TokenizerKind::ByteLevelBpe)
    add_byte_level(out, tokenizer);
  else
    add_sentencepiece(out, tokenizer);
}

}  // namespace astrai
