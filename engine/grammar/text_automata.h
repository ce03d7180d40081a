// Free text as grammar rules, for grammars that start partway through an
// output (docs/tool-calling.md): a reasoning model's thinking up to
// "</think>", or the text before a lazily enforced tool call's opener
// ("<tool_call>", llama.cpp's grammar triggers). Each is a rule written
// directly as its automaton (GrammarBuilder::define_automaton): the
// Knuth-Morris-Pratt matcher of the marker, one state per marker byte
// matched so far. As one rule, not a call per byte, the matcher's stack
// stays one frame deep however long the text, and the token cache accepts
// every token that stays inside the text without looking at it again.
#pragma once

#include <string_view>
#include <vector>

#include "engine/grammar/grammar.h"

namespace astrai::grammar {

// Any bytes up to and including the first occurrence of `marker` (not empty):
// final only once the marker is complete, with no edge out of that state.
std::vector<State> text_through_marker(std::string_view marker);

// Any bytes that do not contain `marker` (not empty): every state final.
std::vector<State> text_without_marker(std::string_view marker);

}  // namespace astrai::grammar
