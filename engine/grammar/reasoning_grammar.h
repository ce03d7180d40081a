// A grammar that applies only after a reasoning model's thinking: the
// structured output or the tool calls come after its close marker
// ("</think>": the markers are the model's, ReasoningMarkers), and the thinking
// itself is free (ConstraintSpec::Start). vLLM applies its structured-output
// backends once the reasoning parser sees the end of the reasoning; here the
// same rule is part of the grammar, so the token cache and the masks need
// nothing new.
#pragma once

#include "engine/grammar/grammar.h"
#include "engine/grammar/token_constraint.h"

namespace astrai::grammar {

// `answer` behind its reasoning: any text up to the first markers.close (not
// containing it), then whitespace (" \t\n\r", at most kMaxWhitespace bytes, as between JSON tokens),
// then `answer`; with markers.answer_open, that opener right after the close
// instead of the whitespace, then `answer` (gpt-oss). optional: the output
// may instead be `answer` (behind answer_open) from its first byte, and the
// reasoning must then open with markers.open at that first byte (the rule of
// engine/chat_planning/reasoning_split.h). Throws ConstraintError for empty
// markers.
Grammar after_reasoning(Grammar answer, const ReasoningMarkers& markers, bool optional);

}  // namespace astrai::grammar
