// The grammar engine's entry points: a ConstraintSpec compiled for one
// vocabulary (shared by every request that uses it), and the grammar alone
// (for tests and the fuzzer). docs/structured-outputs.md describes the subset.
#pragma once

#include <memory>
#include <string_view>

#include "engine/grammar/grammar.h"
#include "engine/grammar/token_constraint.h"
#include "engine/grammar/token_vocabulary.h"

namespace astrai::grammar {

// Throws ConstraintError for a spec outside the subset or over the size bound.
std::shared_ptr<const CompiledConstraint> compile_constraint(const ConstraintSpec& spec,
                                                             const TokenVocabulary& vocabulary);

// The grammar of a spec (what compile_constraint matches tokens against).
Grammar grammar_for(const ConstraintSpec& spec);

// Whether the whole of `text` is a string of the grammar (byte by byte).
bool grammar_matches(const Grammar& grammar, std::string_view text);

}  // namespace astrai::grammar
