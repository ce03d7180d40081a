// Turns a rendered chat prompt into token ids: the tokenizer's own prefix
// (BOS, where it adds one) first, each text run through the tokenizer, each
// special part as its own id.
#pragma once

#include <vector>

#include "engine/chat/chat_template.h"
#include "engine/tokenizer/tokenizer.h"

namespace astrai {

// A Rendered part (the model's own template) is the whole prompt:
// Tokenizer::encode_with_special_tokens of its text, no BOS added (the
// template writes its own). Otherwise: the prefix Tokenizer::encode puts
// first (BOS for SentencePiece and Llama 3; nothing for Qwen, which has no
// BOS, nor gpt-oss, whose post-processor adds none), then the parts in order. Consecutive text parts are encoded as one
// text (Tokenizer::encode without BOS, which puts SentencePiece's dummy space
// in front of each run, as llama.cpp does after a special token). Bos/Eos
// parts become the tokenizer's bos/eos ids; a Special part becomes the id of
// the control or user-defined piece spelled exactly so, or, when the
// vocabulary has none (a base model served with a chat template), is encoded
// as ordinary text.
std::vector<int> encode_prompt(const Prompt& prompt, const Tokenizer& tokenizer);

}  // namespace astrai
