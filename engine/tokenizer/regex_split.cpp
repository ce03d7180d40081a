// RegexSplit: PCRE2 compile and the Isolated split loop.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "engine/tokenizer/regex_split.h"

#include <pcre2.h>

#include <stdexcept>

namespace astrai {

namespace {
// Unicode's White_Space property (Oniguruma's \s in Unicode mode).
constexpr std::string_view kWhiteSpace = R"(\t-\r\x{85}\p{Zs}\x{2028}\x{2029})";
}  // namespace

std::string rewrite_whitespace_classes(std::string_view pattern) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[++i];
      if (e == 's') {
        out += in_class ? std::string(kWhiteSpace) : "[" + std::string(kWhiteSpace) + "]";
      } else if (e == 'S') {
        if (in_class) throw std::invalid_argument("Split regex: \\S inside a character class is not supported");
        out += "[^" + std::string(kWhiteSpace) + "]";
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (c == '[' && !in_class) in_class = true;
    else if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

struct RegexSplit::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

RegexSplit::RegexSplit(std::string pattern) : pattern_(rewrite_whitespace_classes(pattern)), code_(new Code) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  code_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern_.data()), pattern_.size(),
                              PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error, &offset, nullptr);
  if (!code_->code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    throw std::invalid_argument("Split regex '" + pattern + "': " + reinterpret_cast<const char*>(message) +
                                " at offset " + std::to_string(offset));
  }
  pcre2_jit_compile(code_->code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter if JIT is unavailable
}

RegexSplit::~RegexSplit() = default;
RegexSplit::RegexSplit(RegexSplit&&) noexcept = default;
RegexSplit& RegexSplit::operator=(RegexSplit&&) noexcept = default;

std::vector<std::string_view> RegexSplit::split(std::string_view text) const {
  std::vector<std::string_view> pieces;
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match(
      pcre2_match_data_create_from_pattern(code_->code, nullptr), &pcre2_match_data_free);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t gap_start = 0, pos = 0;
  while (pos < text.size()) {
    const int rc = pcre2_match(code_->code, subject, text.size(), pos, 0, match.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) throw std::runtime_error("Split regex: pcre2_match failed with code " + std::to_string(rc));
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(match.get());
    const size_t begin = ov[0], end = ov[1];
    if (end == begin) {  // an empty match takes nothing; step over one code point
      ++pos;
      while (pos < text.size() && (uint8_t(text[pos]) & 0xC0) == 0x80) ++pos;
      continue;
    }
    if (begin > gap_start) pieces.push_back(text.substr(gap_start, begin - gap_start));
    pieces.push_back(text.substr(begin, end - begin));
    gap_start = pos = end;
  }
  if (gap_start < text.size()) pieces.push_back(text.substr(gap_start));
  return pieces;
}

}  // namespace astrai
