// HfTokenizer: tokenizer.json parsing (each component checked against what is
// supported) and the encode pipeline.
#include "engine/tokenizer/hf_tokenizer.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "engine/tokenizer/bpe_pre_tokenizers.h"
#include "engine/tokenizer/byte_level.h"
#include "engine/tokenizer/byte_piece.h"
#include "engine/tokenizer/nfc.h"
#include "engine/text/read_file.h"
#include "engine/tokenizer/unsupported_feature.h"

namespace astrai {

namespace {

using nlohmann::json;


bool is_null_or(const json& j, const char* key, const json& value) {
  return !j.contains(key) || j[key].is_null() || j[key] == value;
}

void check_byte_level(const std::string& origin, const json& j, const char* where) {
  if (!is_null_or(j, "add_prefix_space", false))
    unsupported(origin, std::string(where) + " ByteLevel with add_prefix_space true");
}

// The pre-tokenizer's regex, or "" when words are whole segments.
std::string parse_pre_tokenizer(const std::string& origin, const json& pt) {
  if (pt.is_null()) unsupported(origin, "tokenizer without a pre_tokenizer (a byte-level BPE needs ByteLevel)");
  std::vector<json> steps = pt.at("type") == "Sequence" ? pt.at("pretokenizers").get<std::vector<json>>() : std::vector<json>{pt};
  std::optional<std::string> pattern;
  bool byte_level = false;
  for (const json& step : steps) {
    const std::string type = step.at("type");
    if (type == "Split" && !byte_level && !pattern) {
      if (!step.at("pattern").contains("Regex")) unsupported(origin, "Split pre-tokenizer with a String pattern");
      if (step.at("behavior") != "Isolated") unsupported(origin, "Split behavior " + step.at("behavior").dump());
      if (step.value("invert", false)) unsupported(origin, "Split with invert true");
      pattern = step.at("pattern").at("Regex").get<std::string>();
    } else if (type == "ByteLevel" && !byte_level) {
      check_byte_level(origin, step, "pre_tokenizer");
      byte_level = true;
      if (step.value("use_regex", true)) {
        if (pattern) unsupported(origin, "Split followed by a ByteLevel with use_regex true");
        pattern = std::string(find_bpe_pre_tokenizer("gpt-2")->pattern);  // GPT-2's own split
      }
    } else {
      unsupported(origin, "pre_tokenizer step " + type + " (supported: Split then ByteLevel, or ByteLevel)");
    }
  }
  if (!byte_level) unsupported(origin, "pre_tokenizer without ByteLevel");
  return pattern.value_or("");
}

// The normalizer: none, NFC (Qwen), the legacy '▁' pair (Llama 2, Mistral
// 7B), or Gemma's Replace(' ', '▁') alone.
void parse_normalizer(const std::string& origin, const json& norm, BpeTokenizerParts& parts) {
  if (norm.is_null()) return;
  if (is_legacy_metaspace_normalizer(norm)) {
    parts.metaspace = Metaspace::EverySegment;
    return;
  }
  if (is_replace_only_metaspace_normalizer(norm)) {
    parts.metaspace = Metaspace::Never;
    return;
  }
  if (norm.at("type") != "NFC")
    unsupported(origin, "normalizer " + norm.at("type").dump() +
                            (norm.at("type") == "Sequence" ? " " + norm.dump().substr(0, 200) : "") +
                            " (supported: NFC, or Sequence[Prepend('▁'), Replace(' ', '▁')])");
  parts.nfc = true;
}

// The pre-tokenizer of a SentencePiece-style file: none after the legacy
// normalizer, else Metaspace (without a normalizer).
void parse_sentencepiece_pre_tokenizer(const std::string& origin, const json& pt, BpeTokenizerParts& parts) {
  if (parts.metaspace == Metaspace::Never) {
    check_replace_only_pre_tokenizer(origin, pt);
    return;
  }
  if (parts.metaspace == Metaspace::EverySegment) {
    if (!pt.is_null()) unsupported(origin, "pre_tokenizer " + pt.at("type").dump() + " after the '▁' normalizer");
    return;
  }
  if (parts.nfc) unsupported(origin, "normalizer NFC with a Metaspace pre-tokenizer");
  parts.metaspace = parse_metaspace_pre_tokenizer(origin, pt);
}

bool is_metaspace_pre_tokenizer(const json& pt) { return !pt.is_null() && pt.value("type", "") == "Metaspace"; }

void parse_model(const std::string& origin, const json& m, BpeTokenizerParts& parts) {
  if (m.at("type") != "BPE") unsupported(origin, "model type " + m.at("type").dump());
  if (!is_null_or(m, "dropout", nullptr)) unsupported(origin, "BPE dropout");
  const bool sentencepiece_style = parts.metaspace != Metaspace::None;
  if (m.value("byte_fallback", false) && !sentencepiece_style)
    unsupported(origin, "BPE byte_fallback with byte-level pieces");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (!is_null_or(m, key, "")) unsupported(origin, std::string("BPE ") + key);
  for (const auto& [piece, id] : m.at("vocab").items()) parts.vocab.emplace_back(piece, id.get<int>());
  auto& merges = parts.merges;
  for (const json& merge : m.at("merges")) {
    if (merge.is_array()) {
      merges.emplace_back(merge.at(0).get<std::string>(), merge.at(1).get<std::string>());
    } else {  // "a b": byte-level pieces never hold a real space
      const std::string s = merge.get<std::string>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
        throw std::runtime_error(origin + ": malformed merge '" + s + "'");
      merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    }
  }
  parts.ignore_merges = m.value("ignore_merges", false);
  if (!sentencepiece_style) return;
  parts.fallback.byte_fallback = m.value("byte_fallback", false);
  parts.fallback.fuse_unk = m.value("fuse_unk", false);
  if (!is_null_or(m, "unk_token", nullptr)) {
    const std::string unk = m.at("unk_token");
    const auto it = std::find_if(parts.vocab.begin(), parts.vocab.end(), [&](const auto& v) { return v.first == unk; });
    if (it == parts.vocab.end()) throw std::runtime_error(origin + ": unk_token '" + unk + "' is not in the vocabulary");
    parts.fallback.unk_id = it->second;
  }
}

// The ids TemplateProcessing's `single` template puts before $A (after $A: refused).
std::vector<int> parse_post_processor(const std::string& origin, const json& pp) {
  if (pp.is_null()) return {};
  if (pp.at("type") == "ByteLevel") return {};  // offsets only
  if (pp.at("type") == "Sequence") {
    std::vector<int> ids;
    for (const json& p : pp.at("processors")) {
      auto more = parse_post_processor(origin, p);
      ids.insert(ids.end(), more.begin(), more.end());
    }
    return ids;
  }
  if (pp.at("type") != "TemplateProcessing") unsupported(origin, "post_processor " + pp.at("type").dump());
  std::vector<int> ids;
  bool seen_text = false;
  for (const json& item : pp.at("single")) {
    if (item.contains("Sequence")) {
      seen_text = true;
    } else if (item.contains("SpecialToken")) {
      if (seen_text) unsupported(origin, "TemplateProcessing with tokens after the text");
      const std::string name = item.at("SpecialToken").at("id");
      for (const json& id : pp.at("special_tokens").at(name).at("ids")) ids.push_back(id.get<int>());
    }
  }
  return ids;
}

}  // namespace

HfTokenizer HfTokenizer::load(const std::string& path) {
  const std::string origin = "tokenizer file '" + path + "'";
  return parse(read_whole_file(path, origin), origin);
}

HfTokenizer HfTokenizer::parse(std::string_view json_text, const std::string& origin) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {
    throw std::runtime_error(origin + ": not JSON: " + e.what());
  }
  try {
    BpeTokenizerParts parts;
    parse_normalizer(origin, j.value("normalizer", json()), parts);
    const json& pre_tokenizer = j.at("pre_tokenizer");
    if (parts.metaspace != Metaspace::None || is_metaspace_pre_tokenizer(pre_tokenizer)) {
      parse_sentencepiece_pre_tokenizer(origin, pre_tokenizer, parts);
      check_metaspace_decoder(origin, j.at("decoder"), parts.metaspace);
    } else {
      if (j.at("decoder").is_null() || j.at("decoder").at("type") != "ByteLevel")
        unsupported(origin, "decoder (supported with byte-level pieces: ByteLevel)");
      parts.split_pattern = parse_pre_tokenizer(origin, pre_tokenizer);
    }
    parse_model(origin, j.at("model"), parts);
    parts.prefix_ids = parse_post_processor(origin, j.value("post_processor", json()));
    for (const json& a : j.value("added_tokens", json::array())) {
      for (const char* flag : {"lstrip", "rstrip", "single_word"})
        if (a.value(flag, false)) unsupported(origin, std::string("added token with ") + flag + " true");
      // Without a normalizer (or with Metaspace, a pre-tokenizer) normalized
      // text is the text itself.
      const bool normalized = a.value("normalized", false) && (parts.nfc || parts.metaspace == Metaspace::EverySegment);
      if (normalized && parts.nfc) unsupported(origin, "normalized added token with the NFC normalizer");
      parts.added.push_back(
          {a.at("id").get<int>(), a.at("content").get<std::string>(), a.value("special", false), normalized});
    }
    return from_parts(std::move(parts), origin);
  } catch (const json::exception& e) {
    throw std::runtime_error(origin + ": malformed: " + e.what());
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(origin + ": " + e.what());
  }
}

HfTokenizer HfTokenizer::from_parts(BpeTokenizerParts parts, const std::string& origin) {
  try {
    std::unordered_map<std::string, int> vocab;
    for (auto& [piece, id] : parts.vocab)
      if (!vocab.emplace(piece, id).second) throw std::runtime_error("piece '" + piece + "' appears twice");
    std::optional<RegexSplit> split;
    if (!parts.split_pattern.empty()) split.emplace(parts.split_pattern);
    if (parts.metaspace != Metaspace::None && split) throw std::runtime_error("a Split regex with '▁' pieces");
    HfTokenizer t(BpeModel(std::move(vocab), parts.merges, parts.ignore_merges, parts.fallback), std::move(split));
    t.split_pattern_ = parts.split_pattern;
    t.nfc_ = parts.nfc;
    t.metaspace_ = parts.metaspace;
    t.prefix_ids_ = std::move(parts.prefix_ids);
    t.added_ = std::move(parts.added);
    for (const AddedToken& a : t.added_)
      if (a.content.empty()) unsupported(origin, "empty added token");
    std::stable_sort(t.added_.begin(), t.added_.end(),
                     [](const AddedToken& x, const AddedToken& y) { return x.content.size() > y.content.size(); });
    std::vector<std::pair<std::string, int>> raw, normalized;
    for (const AddedToken& a : t.added_) {
      if (a.normalized && t.metaspace_ != Metaspace::EverySegment)
        throw std::runtime_error("normalized added token '" + a.content + "' without the '▁' normalizer");
      if (a.normalized)
        normalized.emplace_back(apply_metaspace(a.content, Metaspace::EverySegment, true), a.id);
      else
        raw.emplace_back(a.content, a.id);
    }
    t.raw_added_ = AddedTokenMatcher(std::move(raw));
    t.normalized_added_ = AddedTokenMatcher(std::move(normalized));

    int max_id = -1;
    for (const auto& [piece, id] : t.model_.vocab()) max_id = std::max(max_id, id);
    for (const AddedToken& a : t.added_) max_id = std::max(max_id, a.id);
    for (const int id : t.prefix_ids_) max_id = std::max(max_id, id);
    if (max_id < 0 || max_id > 10'000'000) throw std::runtime_error("ids out of range");
    t.id_bytes_.assign(size_t(max_id) + 1, "");
    t.has_token_.assign(size_t(max_id) + 1, false);
    for (const auto& [piece, id] : t.model_.vocab()) {
      if (id < 0) throw std::runtime_error("negative id for '" + piece + "'");
      t.id_bytes_[size_t(id)] = t.piece_bytes(piece);
      t.has_token_[size_t(id)] = true;
    }
    // An added token's text wins over a piece of the same id. The decoder
    // runs on added tokens too: with '▁' pieces it turns Gemma's whitespace
    // tokens ("▁▁", ...) into spaces, as Hugging Face's decode does.
    for (const AddedToken& a : t.added_) {
      if (a.id < 0) throw std::runtime_error("negative id for added token '" + a.content + "'");
      t.id_bytes_[size_t(a.id)] = t.metaspace_ == Metaspace::None ? a.content : metaspace_to_spaces(a.content);
      t.has_token_[size_t(a.id)] = true;
    }
    for (const int id : t.prefix_ids_)
      if (!t.has_token(id)) throw std::runtime_error("post_processor id " + std::to_string(id) + " has no token");
    return t;
  } catch (const std::exception& e) {
    const std::string what = e.what();
    throw std::runtime_error(what.starts_with(origin) ? what : origin + ": " + what);
  }
}

BpeTokenizerParts HfTokenizer::parts() const {
  BpeTokenizerParts p;
  for (const auto& [piece, id] : model_.vocab()) p.vocab.emplace_back(piece, id);
  std::sort(p.vocab.begin(), p.vocab.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  p.merges = model_.merge_list();
  p.ignore_merges = model_.ignore_merges();
  p.added = added_;
  std::sort(p.added.begin(), p.added.end(), [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
  p.prefix_ids = prefix_ids_;
  p.split_pattern = split_pattern_;
  p.nfc = nfc_;
  p.metaspace = metaspace_;
  p.fallback = model_.fallback();
  return p;
}

bool HfTokenizer::is_special(int id) const {
  return std::any_of(added_.begin(), added_.end(), [id](const AddedToken& a) { return a.id == id && a.special; });
}

std::string HfTokenizer::piece_bytes(const std::string& piece) const {
  if (metaspace_ == Metaspace::None) {
    auto bytes = byte_level_decode(piece);
    if (!bytes) throw std::runtime_error("piece '" + piece + "' is not in the byte-level alphabet");
    return std::move(*bytes);
  }
  if (model_.fallback().byte_fallback)
    if (const auto byte = parse_byte_piece(piece)) return std::string(1, char(*byte));
  return metaspace_to_spaces(piece);
}

void HfTokenizer::encode_text(std::string_view text, bool at_text_start, std::vector<int>& out) const {
  if (text.empty()) return;
  if (metaspace_ != Metaspace::None) {  // the segment is one word
    model_.encode_word(apply_metaspace(text, metaspace_, at_text_start), out);
    return;
  }
  std::string normalized;
  if (nfc_) {
    normalized = nfc_normalize(text);
    text = normalized;
  }
  if (!split_) {
    model_.encode_word(byte_level_encode(text), out);
    return;
  }
  for (const std::string_view word : split_->split(text)) model_.encode_word(byte_level_encode(word), out);
}

void HfTokenizer::encode_normalized_segment(std::string_view text, std::vector<int>& out) const {
  if (text.empty()) return;
  const std::string normalized = apply_metaspace(text, Metaspace::EverySegment, true);
  normalized_added_.split(
      normalized, [&](std::string_view word, size_t) { model_.encode_word(word, out); },
      [&](int id) { out.push_back(id); });
}

std::vector<int> HfTokenizer::encode(std::string_view text, bool add_special) const {
  std::vector<int> ids;
  if (add_special) ids = prefix_ids_;
  // Added tokens first (those matched in the text as given), then each
  // segment between them.
  raw_added_.split(
      text,
      [&](std::string_view segment, size_t offset) {
        if (normalized_added_.empty())
          encode_text(segment, offset == 0, ids);
        else
          encode_normalized_segment(segment, ids);
      },
      [&](int id) { ids.push_back(id); });
  return ids;
}

std::string HfTokenizer::token_bytes(int id) const {
  if (!has_token(id)) throw std::invalid_argument("HfTokenizer: id " + std::to_string(id) + " has no token");
  return id_bytes_[size_t(id)];
}

std::string HfTokenizer::decode(std::span<const int> ids, bool skip_special) const {
  std::string text;
  for (const int id : ids)
    if (!(skip_special && is_special(id))) text += token_bytes(id);
  if (metaspace_ != Metaspace::None && metaspace_ != Metaspace::Never && text.starts_with(' '))
    text.erase(0, 1);  // the dummy prefix
  return text;
}

}  // namespace astrai
