#include "engine/grammar/text_automata.h"

#include <stdexcept>
#include <string>

namespace astrai::grammar {

namespace {

// next[k][b]: the number of marker bytes matched after reading byte b with k
// matched (k < marker size): the Knuth-Morris-Pratt automaton.
std::vector<std::vector<int>> marker_automaton(std::string_view marker) {
  if (marker.empty()) throw std::invalid_argument("a text automaton needs a non-empty marker");
  const size_t n = marker.size();
  std::vector<size_t> fail(n + 1, 0);  // fail[k]: the longest proper border of marker[0, k)
  for (size_t k = 2; k <= n; ++k) {
    size_t j = fail[k - 1];
    while (j > 0 && marker[j] != marker[k - 1]) j = fail[j];
    if (marker[j] == marker[k - 1]) ++j;
    fail[k] = j;
  }
  std::vector<std::vector<int>> next(n, std::vector<int>(256, 0));
  for (size_t k = 0; k < n; ++k)
    for (int b = 0; b < 256; ++b) {
      if (uint8_t(marker[k]) == b) next[k][size_t(b)] = int(k + 1);
      else next[k][size_t(b)] = k == 0 ? 0 : next[fail[k]][size_t(b)];
    }
  return next;
}

// One state's byte edges, consecutive bytes with one target merged into a range.
std::vector<ByteEdge> edges_of(const std::vector<int>& targets, int skip_target) {
  std::vector<ByteEdge> edges;
  for (int b = 0; b < 256; ++b) {
    const int t = targets[size_t(b)];
    if (t == skip_target) continue;
    if (!edges.empty() && edges.back().target == t && edges.back().hi == b - 1) edges.back().hi = uint8_t(b);
    else edges.push_back({uint8_t(b), uint8_t(b), t});
  }
  return edges;
}

}  // namespace

std::vector<State> text_through_marker(std::string_view marker) {
  const auto next = marker_automaton(marker);
  std::vector<State> states(marker.size() + 1);
  for (size_t k = 0; k < marker.size(); ++k) states[k].bytes = edges_of(next[k], -1);
  states.back().final = true;
  return states;
}

std::vector<State> text_without_marker(std::string_view marker) {
  const auto next = marker_automaton(marker);
  const int complete = int(marker.size());
  std::vector<State> states(marker.size());
  for (size_t k = 0; k < marker.size(); ++k) {
    states[k].bytes = edges_of(next[k], complete);  // the byte that would complete the marker has no edge
    states[k].final = true;
  }
  return states;
}

}  // namespace astrai::grammar
