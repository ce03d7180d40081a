// A stop sequence that the tiny model's greedy output is known to contain,
// and the text it must leave: found by searching the unstopped output (plain
// string search, independent of the engine's TextStream).
#pragma once

#include <string>

#include <catch2/catch.hpp>

#include "engine/inference_engine.h"
#include "tests/server/server_fixture.h"

namespace astrai::test {

struct StopCase {
  std::string unstopped;      // greedy output without stop sequences
  std::string sequence;       // two printable ASCII characters from it (space included)
  std::string expected_text;  // unstopped up to the first occurrence of sequence
};

inline StopCase find_stop_case(InferenceEngine& engine, const std::string& prompt, int max_tokens) {
  StopCase c;
  c.unstopped = engine_alone(engine, prompt, max_tokens).text;
  // The first pair of printable ASCII characters (space included) after at
  // least one character of text, so that the expected text is not empty.
  const auto printable = [](char ch) { return ch >= 0x20 && ch < 0x7f; };
  for (size_t p = 1; p + 1 < c.unstopped.size(); ++p) {
    if (printable(c.unstopped[p]) && printable(c.unstopped[p + 1])) {
      c.sequence = c.unstopped.substr(p, 2);
      c.expected_text = c.unstopped.substr(0, c.unstopped.find(c.sequence));
      if (!c.expected_text.empty()) return c;
    }
  }
  FAIL("no usable stop sequence in the greedy output '" << c.unstopped << "'");
  return c;
}

}  // namespace astrai::test
