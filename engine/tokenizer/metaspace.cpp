// The '▁' rules of SentencePiece-style tokenizer.json: which components
// express them, and applying them to a segment of text.
#include "engine/tokenizer/metaspace.h"

#include <nlohmann/json.hpp>
#include <stdexcept>
#include "engine/tokenizer/unsupported_feature.h"

namespace astrai {

namespace {

using nlohmann::json;

constexpr std::string_view kMetaspace = "\xE2\x96\x81";  // U+2581 '▁'

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0;;) {
    const size_t hit = text.find(from, at);
    out += text.substr(at, hit - at);
    if (hit == std::string_view::npos) return out;
    out += to;
    at = hit + from.size();
  }
}

// A Replace component (normalizer or decoder) of a String pattern `from` by `to`.
bool is_replace(const json& j, std::string_view from, std::string_view to) {
  return j.value("type", "") == "Replace" && j.contains("pattern") && j["pattern"].value("String", "") == from &&
         j.value("content", "") == to;
}

}  // namespace

bool is_legacy_metaspace_normalizer(const json& n) {
  if (n.value("type", "") != "Sequence" || !n.contains("normalizers")) return false;
  const json& steps = n["normalizers"];
  return steps.size() == 2 && steps[0].value("type", "") == "Prepend" && steps[0].value("prepend", "") == kMetaspace &&
         is_replace(steps[1], " ", kMetaspace);
}

bool is_replace_only_metaspace_normalizer(const json& n) {
  if (n.value("type", "") == "Sequence" && n.contains("normalizers") && n["normalizers"].size() == 1)
    return is_replace(n["normalizers"][0], " ", kMetaspace);  // a Sequence of that one step
  return is_replace(n, " ", kMetaspace);
}

void check_replace_only_pre_tokenizer(const std::string& origin, const json& pt) {
  if (pt.is_null()) return;
  const bool space_split = pt.value("type", "") == "Split" && pt.contains("pattern") &&
                           pt["pattern"].value("String", "") == " " && !pt.value("invert", false);
  if (!space_split)
    unsupported(origin, "pre_tokenizer " + pt.dump().substr(0, 200) +
                            " after the Replace(' ', '▁') normalizer (supported: none, or a Split on ' ')");
}

Metaspace parse_metaspace_pre_tokenizer(const std::string& origin, const json& pt) {
  if (pt.value("replacement", "") != kMetaspace) unsupported(origin, "Metaspace pre-tokenizer with a replacement other than '▁'");
  // split true cuts the text before every '▁', so merges never cross a space:
  // not what SentencePiece does, and not implemented.
  if (!pt.contains("split") || pt["split"] != false) unsupported(origin, "Metaspace pre-tokenizer with split true");
  const std::string scheme = pt.contains("prepend_scheme") ? pt["prepend_scheme"].get<std::string>()
                             : pt.value("add_prefix_space", true) ? "always"
                                                                   : "never";
  if (scheme == "first") return Metaspace::First;
  if (scheme == "always") return Metaspace::Always;
  unsupported(origin, "Metaspace pre-tokenizer with prepend_scheme '" + scheme + "'");
}

void check_metaspace_decoder(const std::string& origin, const json& d, Metaspace rule) {
  if (d.is_null()) unsupported(origin, "SentencePiece-style tokenizer without a decoder");
  const json steps = d.value("decoders", json::array());
  const bool replace_fallback_fuse = d.value("type", "") == "Sequence" && steps.size() >= 3 &&
                                     is_replace(steps[0], kMetaspace, " ") &&
                                     steps[1].value("type", "") == "ByteFallback" && steps[2].value("type", "") == "Fuse";
  if (rule == Metaspace::Never) {  // no dummy prefix: no Strip either
    if (!replace_fallback_fuse || steps.size() != 3)
      unsupported(origin, "decoder " + d.dump().substr(0, 200) +
                              " (supported after the Replace(' ', '▁') normalizer: Sequence[Replace('▁', ' '), "
                              "ByteFallback, Fuse])");
    return;
  }
  if (d.value("type", "") == "Metaspace") {
    if (d.value("replacement", "") != kMetaspace) unsupported(origin, "Metaspace decoder with a replacement other than '▁'");
    if (d.value("prepend_scheme", "always") == "never" || !d.value("add_prefix_space", true))
      unsupported(origin, "Metaspace decoder that keeps the first space");
    return;
  }
  const bool legacy = replace_fallback_fuse && steps.size() == 4 && steps[3].value("type", "") == "Strip" && steps[3].value("content", "") == " " &&
                      steps[3].value("start", 0) == 1 && steps[3].value("stop", 0) == 0;
  if (!legacy)
    unsupported(origin, "decoder " + d.dump().substr(0, 200) +
                            " (supported with '▁' pieces: Metaspace, or Sequence[Replace('▁', ' '), ByteFallback, "
                            "Fuse, Strip(' ', 1, 0)])");
}

std::string apply_metaspace(std::string_view segment, Metaspace rule, bool at_text_start) {
  std::string text = replace_all(segment, " ", kMetaspace);
  if (rule == Metaspace::Never) return text;
  const bool prefix = rule == Metaspace::EverySegment ||
                      (!text.starts_with(kMetaspace) && (rule == Metaspace::Always || at_text_start));
  return prefix ? std::string(kMetaspace) + text : text;
}

std::string metaspace_to_spaces(std::string_view piece) { return replace_all(piece, kMetaspace, " "); }

}  // namespace astrai
