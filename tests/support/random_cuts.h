// A text cut at random points (RapidCheck draws each piece's length), for the
// property every streamed parser shares: its pieces joined equal the parse
// of the whole text (tests/support/joined_streams.h).
#pragma once

#include <string>
#include <vector>

#include <rapidcheck.h>

namespace astrai::test {

inline std::vector<std::string> random_cuts(const std::string& text) {
  std::vector<std::string> pieces;
  for (size_t at = 0; at < text.size();) {
    const size_t n = *rc::gen::inRange<size_t>(1, text.size() - at + 1);
    pieces.push_back(text.substr(at, n));
    at += n;
  }
  return pieces;
}

}  // namespace astrai::test
