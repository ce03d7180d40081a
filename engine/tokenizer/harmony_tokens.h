// gpt-oss's vocabulary (o200k_harmony) writes each message of its output as
//   <|start|>ROLE<|channel|>CHANNEL<|message|>TEXT<|end|>
// with control tokens, and ends a turn with <|return|> (an answer) or
// <|call|> (a tool call). The chat APIs read that structure back out of the
// text (engine/chat_planning/harmony_output.h), so the markers must be text:
// <|start|>, <|channel|>, <|message|>, <|constrain|> and <|end|> are typed
// UserDefined (spelled out by decode_token, matched by output grammars);
// <|end|> ends a message, not the generation, and <|return|> and <|call|> do
// end it. llama.cpp reads the vocabulary the same way (llama-vocab.cpp: the
// "quick hack for gpt-oss" and the o200k_harmony end-of-generation rule).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace astrai {

// The message markers spelled out in a harmony vocabulary's text.
inline constexpr std::string_view kHarmonyTextMarkers[] = {"<|start|>", "<|channel|>", "<|message|>",
                                                           "<|constrain|>", "<|end|>"};
// The tokens that end a harmony turn.
inline constexpr std::string_view kHarmonyTurnEnds[] = {"<|return|>", "<|call|>"};

// Whether a vocabulary is harmony's: it has added tokens for both turn ends
// and for <|channel|> (the one marker no other chat format spells).
bool is_harmony_vocabulary(const std::vector<std::string>& pieces, const std::vector<TokenType>& types);

// In a harmony vocabulary, retypes the control markers of
// kHarmonyTextMarkers as UserDefined and returns true; leaves any other
// vocabulary as it is and returns false.
bool type_harmony_markers_as_text(const std::vector<std::string>& pieces, std::vector<TokenType>& types);

}  // namespace astrai
