// The vocabulary inside a GGUF file, as llama.cpp stores it (tokenizer.ggml.*):
//  - `llama`: SentencePiece pieces with '▁' for spaces, scores, token types;
//  - `gpt2`: byte-level BPE pieces (GPT-2's alphabet), merges "a b" in rank
//    order, token types (added tokens are Control when special, UserDefined
//    otherwise), and the pre-tokenizer by name (tokenizer.ggml.pre, see
//    engine/tokenizer/bpe_pre_tokenizers.h); add_bos_token says whether
//    encoding puts BOS first.
#pragma once

#include "engine/model_files/gguf/gguf_reader.h"
#include "engine/model_files/gguf/gguf_writer.h"
#include "engine/tokenizer/tokenizer.h"

namespace astrai {

// Throws std::runtime_error naming the file and the key at fault, including a
// vocabulary kind or pre-tokenizer that is not supported.
Tokenizer read_gguf_tokenizer(const GgufReader& g, int vocab_size);

// Throws std::invalid_argument for a byte-level tokenizer that GGUF cannot
// name (a Split regex outside the known pre-tokenizers, a post-processor
// prefix other than BOS).
void add_gguf_tokenizer(GgufWriter& out, const Tokenizer& tokenizer);

}  // namespace astrai
