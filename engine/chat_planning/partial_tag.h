// A streamed parser's hold-back rule: the longest suffix of the text so far
// that is a proper prefix of a tag ("<tool_" of "<tool_call>") may be
// completed by the next piece, so it is held rather than sent as text. The
// tool-call and reasoning streams both hold back this way.
#pragma once

#include <algorithm>
#include <string_view>

namespace astrai {

inline size_t partial_tag_suffix(std::string_view text, std::string_view tag) {
  for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n)
    if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
  return 0;
}

}  // namespace astrai
