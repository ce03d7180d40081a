// A made-up SentencePiece-style vocabulary of any size >= 259, for synthetic
// models (`astrai make-model`) and tests: it has the same special and byte
// pieces as llama2.c's vocabularies, so any text encodes.
#pragma once

#include "engine/tokenizer/tokenizer.h"

namespace astrai {

// The first kSyntheticTokenizerMinVocab ids of every synthetic vocabulary:
// <unk>, <s>, </s> and the 256 byte pieces <0x00>..<0xFF>.
inline constexpr int kSyntheticTokenizerMinVocab = 3 + 256;

// Ids: 0 <unk> (Unknown), 1 <s> and 2 </s> (Control), 3..258 <0x00>..<0xFF>
// (Byte), then Normal pieces: the 95 printable ASCII characters, then for
// lengths k = 1, 2, ...: " "+w and (k >= 2) w for each lower-case word w of
// length k in lexicographic order ("a".."z" words), until vocab_size pieces.
// Normal pieces score -(their rank), so shorter, earlier pieces merge first;
// every multi-character piece is reachable by merging its prefix with its
// last character. Throws std::invalid_argument when vocab_size < 259.
Tokenizer make_synthetic_tokenizer(int vocab_size);

}  // namespace astrai
