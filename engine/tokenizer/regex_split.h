// The `Split` pre-tokenizer of tokenizer.json with behavior `Isolated`: the
// text is cut at every match of a regex, and both the matches and the text
// between them become pieces. Compiled with PCRE2 (UTF, Unicode properties);
// `\s` and `\S` are rewritten to Unicode's White_Space, which is what the
// Oniguruma engine of Hugging Face's tokenizers means by them (PCRE2's own \s
// also takes U+180E).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace astrai {

class RegexSplit {
 public:
  // Throws std::invalid_argument with PCRE2's message for a bad pattern.
  explicit RegexSplit(std::string pattern);
  ~RegexSplit();
  RegexSplit(RegexSplit&&) noexcept;
  RegexSplit& operator=(RegexSplit&&) noexcept;

  // Matches and the gaps between them, in order; together they are `text`.
  // Invalid UTF-8 never matches, so its bytes end up in gaps.
  std::vector<std::string_view> split(std::string_view text) const;

  // The pattern as handed to PCRE2 (after the \s rewrite).
  const std::string& pcre2_pattern() const { return pattern_; }

 private:
  struct Code;
  std::string pattern_;
  std::unique_ptr<Code> code_;
};

// `pattern` with \s and \S spelled as classes of White_Space code points.
std::string rewrite_whitespace_classes(std::string_view pattern);

}  // namespace astrai
